"""The call-site questions rules may ask (the TSX3xx family): how the artifact a call makes is
followed to its uses in the file, and how a producing call is rewritten, or why it cannot be.

The answers come from the program model's call-site part (:mod:`ts2export.model.callsites`); this
module is the narrow face rules see of it. Each question takes the asking rule first.
"""

from ts2export.model.callsites.bindings import binding, origin
from ts2export.model.callsites.models import model_kind, script_module_instance
from ts2export.model.callsites.plans import plan_uses
from ts2export.model.callsites.producers import (
    FUNCTION_HELPER, compares_with_itself, plan_for, plan_instance_save, plan_load, plan_script, plan_trace,
)
from ts2export.model.callsites.programs import HELPER, plan_trace_module
from ts2export.model.callsites.syntax import (
    EXPORT_LOAD, JIT_LOAD, JIT_SAVE, LITE_LOAD, LITE_METHODS, MOVE, OPTIMIZE, SCRIPT, TRACE, TRACE_MODULE, argument,
    code, in_init,
)
from ts2export.model.callsites.uses import Use, classify_use
from ts2export.model.callsites.writers import pte_path, writers

__all__ = [
    "EXPORT_LOAD", "FUNCTION_HELPER", "HELPER", "JIT_LOAD", "JIT_SAVE", "LITE_LOAD", "LITE_METHODS", "MOVE", "OPTIMIZE",
    "SCRIPT", "TRACE", "TRACE_MODULE", "Use", "argument", "binding", "classify_use", "code", "compares_with_itself", "in_init", "model_kind", "origin",
    "plan_for", "plan_instance_save", "plan_load", "plan_script", "plan_trace", "plan_trace_module", "plan_uses", "pte_path",
    "script_module_instance", "writers",
]
