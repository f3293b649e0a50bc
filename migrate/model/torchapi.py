"""The torch names the program model knows: TorchScript's entry points, writers and readers, the
calls that pass a module through, and the module methods that return the module itself."""

SCRIPT = "torch.jit.script"
TRACE = "torch.jit.trace"
TRACE_MODULE = "torch.jit.trace_module"
JIT_SAVE = "torch.jit.save"
JIT_LOAD = "torch.jit.load"
LITE_LOADS = {"torch.jit._load_for_lite_interpreter", "torch.jit.mobile._load_for_lite_interpreter"}
SCRIPT_IF_TRACING = "torch.jit.script_if_tracing"
# Functions of libraries that compile what they are given with TorchScript (e3nn's `compile` scripts
# or traces a model's submodules as their `@compile_mode` says): a call of one is a script site that
# no rule rewrites, so the code it compiles stays compiled (found by a real package's own tests).
LIBRARY_SCRIPTS = {"e3nn.util.jit.compile", "e3nn.util.jit.script", "e3nn.util.jit.trace", "e3nn.util.jit.trace_module"}
SCRIPT_MODULES = {"torch.jit.ScriptModule", "torch.jit._script.ScriptModule", "torch.jit.RecursiveScriptModule"}
# Calls that return (a transformed copy of) the TorchScript module they are given.
PASS_THROUGH = {"torch.jit.freeze", "torch.jit.optimize_for_inference",
                "torch.utils.mobile_optimizer.optimize_for_mobile"}
# Methods of a module that return the module itself.
SELF_METHODS = {"eval", "train", "to", "cpu", "cuda", "half", "float", "double", "bfloat16", "requires_grad_",
                "share_memory"}
RECURRENT = {"torch.nn.GRU", "torch.nn.LSTM", "torch.nn.RNN", "torch.nn.modules.rnn.GRU", "torch.nn.modules.rnn.LSTM",
             "torch.nn.modules.rnn.RNN"}
#: Packing a padded batch for a recurrent layer: torch.export traces no recurrent layer run on the
#: PackedSequence it makes (see Reach.packed_sequences).
PACKING = {"torch.nn.utils.rnn.pack_padded_sequence", "torch.nn.utils.rnn.pack_sequence"}
SAVE_METHODS = {"save": "save", "_save_for_lite_interpreter": "lite-save", "_save_to_buffer_for_lite_interpreter": "lite-save"}
#: The keywords those methods take (ScriptModule.save(f, _extra_files=...); the lite ones add
#: _use_flatbuffer): a `.save(f, save_format="h5")` (Keras) or `.save(path, overwrite=True)` is
#: not a ScriptModule's, which would raise TypeError.
SAVE_KEYWORDS = frozenset({"f", "_extra_files", "_use_flatbuffer"})
#: TorchScript's context managers (``contextlib`` generator functions): called outside a ``with``,
#: they build a generator and run nothing, so what such a call is handed is not used there.
INERT_CALLS = frozenset({"torch.jit.optimized_execution", "torch.jit._fuser.optimized_execution",
                         "torch.jit.fuser", "torch.jit._fuser.fuser"})
