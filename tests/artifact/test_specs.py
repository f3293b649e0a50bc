"""The --input grammar, generated samples and input checks."""

import pytest
import torch

from ts2export.artifact.errors import ArtifactError
from ts2export.artifact.specs import parse_specs, spec_from_tensors


def test_static_spec():
    sig = parse_specs(["float32[2,3,224,224]"])
    assert sig.symbols == {}
    (leaf,) = sig.leaves
    assert leaf.dtype == torch.float32 and leaf.dims == (2, 3, 224, 224)
    assert sig.dynamic_shapes() == (None,)


def test_named_dynamic_dims_are_shared_and_become_export_dims():
    sig = parse_specs(["float32[B=1..64,3,224,224]", "int64[B,7]{0..999}"])
    assert sig.symbols == {"B": (1, 64)}
    ds = sig.dynamic_shapes()
    assert ds[0][0] is ds[1][0]
    assert ds[0][0].__name__ == "B" and ds[0][0].min == 1 and ds[0][0].max == 64
    assert (sig.leaves[1].low, sig.leaves[1].high) == (0, 999)


def test_unbounded_dim_and_scalar():
    sig = parse_specs(["float16[N=2..]", "bool[]"])
    assert sig.symbols == {"N": (2, None)}
    assert sig.leaves[1].dims == () and sig.leaves[1].dtype == torch.bool


@pytest.mark.parametrize(
    "text, message",
    [
        ("float33[2]", "unknown dtype"),
        ("float32(2,3)", "expected DTYPE[dims]"),
        ("float32[B,3]", "dim B has no range"),
        ("float32[B=5..2]", "is empty"),
        ("int64[4]{9..1}", "is empty"),
        ("bool[4]{0..1}", "bool inputs take no value range"),
        ("float32[2,x-1]", "cannot read dim"),
    ],
)
def test_bad_specs_give_one_clear_error(text, message):
    with pytest.raises(ArtifactError, match=message.replace("[", r"\[")):
        parse_specs([text])


def test_samples_cover_min_max_mid_and_respect_value_ranges():
    sig = parse_specs(["float32[B=1..300,3]", "int64[B,5]{10..20}"])
    plans = sig.sample_sizes(5, cap=64)
    assert [label for label, _ in plans[:3]] == ["min", "max", "mid"]
    assert [sizes["B"] for _, sizes in plans[:3]] == [1, 64, 32]
    assert all(1 <= sizes["B"] <= 64 for _, sizes in plans)
    gen = torch.Generator().manual_seed(0)
    for _, sizes in plans:
        x, ids = sig.make(sizes, gen)
        assert x.shape == (sizes["B"], 3) and x.dtype == torch.float32
        assert ids.dtype == torch.int64 and ids.shape == (sizes["B"], 5)
        assert int(ids.min()) >= 10 and int(ids.max()) <= 20


def test_float8_generation_makes_valid_values():
    sig = parse_specs(["float8_e8m0fnu[4,4]", "float8_e4m3fn[4]"])
    scales, q = sig.make({}, torch.Generator().manual_seed(0))
    assert scales.dtype == torch.float8_e8m0fnu and q.dtype == torch.float8_e4m3fn
    as_float = scales.float()
    assert torch.isfinite(as_float).all() and torch.equal(torch.exp2(torch.log2(as_float).round()), as_float)


def test_check_reports_count_dtype_rank_static_and_range():
    sig = parse_specs(["float32[B=2..8,3]", "int64[B]"])
    ok = [torch.zeros(4, 3), torch.zeros(4, dtype=torch.int64)]
    sig.check(ok)
    cases = [
        ([torch.zeros(4, 3)], "expected 2 input"),
        ([torch.zeros(4, 3, dtype=torch.float64), ok[1]], "dtype float64"),
        ([torch.zeros(4, 3, 1), ok[1]], "rank 3"),
        ([torch.zeros(4, 5), ok[1]], "dim 1 is 5"),
        ([torch.zeros(9, 3), torch.zeros(9, dtype=torch.int64)], "outside its range 2..8"),
        ([torch.zeros(4, 3), torch.zeros(5, dtype=torch.int64)], "must match"),
    ]
    for tensors, message in cases:
        with pytest.raises(ArtifactError, match=message):
            sig.check(tensors)


def test_spec_from_tensors_records_integer_ranges():
    sig = spec_from_tensors([torch.tensor([[3, 9]]), torch.ones(2)])
    assert sig.leaves[0].dims == (1, 2) and (sig.leaves[0].low, sig.leaves[0].high) == (3, 9)
    assert sig.leaves[1].low is None


def test_describe_round_trips_through_the_grammar():
    texts = ["float32[B=1..64,3,224,224]", "int64[B,7]{0..999}", "float16[N=2..]"]
    sig = parse_specs(texts)
    assert sig.describe() == texts
    assert parse_specs(sig.describe()) == sig
