"""Output comparison: structure, dtype, shape, tolerances per dtype, NaN/Inf positions, metrics."""

import math

import torch

from ts2export.artifact.compare import compare_outputs, tolerances


def test_equal_nested_outputs_pass_and_name_each_leaf():
    out = ({"logits": torch.ones(2, 3)}, [torch.zeros(2), 3])
    res = compare_outputs(out, ({"logits": torch.ones(2, 3)}, [torch.zeros(2), 3]))
    assert res.ok and res.structure is None
    assert [leaf.output for leaf in res.leaves] == ["[0]['logits']", "[1][0]", "[1][1]"]
    assert res.leaves[0].max_abs == 0.0 and res.leaves[0].pct_out == 0.0


def test_structure_mismatch_is_reported_before_values():
    res = compare_outputs((torch.ones(1), torch.ones(1)), {"a": torch.ones(1), "b": torch.ones(1)})
    assert not res.ok and "output structure differs" in res.structure


def test_immutable_containers_compare_as_plain_ones():
    from torch.fx.immutable_collections import immutable_dict, immutable_list

    res = compare_outputs({"a": [torch.ones(1)]}, immutable_dict({"a": immutable_list([torch.ones(1)])}))
    assert res.ok


def test_dtype_and_shape_mismatch():
    assert "dtype differs" in compare_outputs(torch.ones(2), torch.ones(2, dtype=torch.float64)).leaves[0].detail
    assert "shape differs" in compare_outputs(torch.ones(2), torch.ones(3)).leaves[0].detail


def test_metrics_for_a_perturbed_tensor():
    expected = torch.tensor([1.0, 2.0, 4.0, 8.0])
    actual = expected.clone()
    actual[2] += 0.5
    res = compare_outputs(expected, actual)
    (leaf,) = res.leaves
    assert not res.ok
    assert math.isclose(leaf.max_abs, 0.5) and math.isclose(leaf.max_rel, 0.125)
    assert leaf.pct_out == 25.0
    assert (leaf.rtol, leaf.atol) == tolerances(torch.float32)


def test_tolerances_follow_the_dtype():
    base = torch.linspace(1, 2, 50)
    noisy = base * (1 + 2e-3)
    # 0.2% relative error: far out for float32, within bfloat16's 1.6e-2
    assert not compare_outputs(base, noisy).ok
    assert compare_outputs(base.to(torch.bfloat16), noisy.to(torch.bfloat16)).ok
    assert tolerances(torch.float16) == (1e-3, 1e-5)
    # user tolerances override
    assert compare_outputs(base, noisy, rtol=1e-2, atol=0.0).ok


def test_integers_and_bools_are_exact():
    assert not compare_outputs(torch.tensor([1, 2]), torch.tensor([1, 3])).ok
    assert compare_outputs(torch.tensor([True, False]), torch.tensor([True, False])).ok
    assert not compare_outputs(torch.tensor([True]), torch.tensor([False]), rtol=0.5, atol=1.0).ok


def test_nan_and_inf_positions():
    nan = float("nan")
    inf = float("inf")
    same = compare_outputs(torch.tensor([nan, 1.0, inf]), torch.tensor([nan, 1.0, inf]))
    assert same.ok and "NaN in both" in same.leaves[0].detail
    moved = compare_outputs(torch.tensor([nan, 1.0]), torch.tensor([1.0, nan]))
    assert not moved.ok and "NaN at 2 different position" in moved.leaves[0].detail
    flipped = compare_outputs(torch.tensor([inf, 1.0]), torch.tensor([-inf, 1.0]))
    assert not flipped.ok and "Inf at 1" in flipped.leaves[0].detail


def test_float8_outputs_are_upcast_and_compared():
    x = torch.randn(64, generator=torch.Generator().manual_seed(0))
    q = x.to(torch.float8_e4m3fn)
    assert compare_outputs(q, q.clone()).ok
    scales = torch.exp2(torch.arange(-3, 3).float()).to(torch.float8_e8m0fnu)
    assert compare_outputs(scales, scales.clone()).ok
    doubled = (scales.float() * 2).to(torch.float8_e8m0fnu)
    res = compare_outputs(scales, doubled)
    assert not res.ok and res.leaves[0].dtype == "float8_e8m0fnu" and res.leaves[0].max_rel == 1.0


def test_flat_mode_compares_leaves_in_order():
    assert compare_outputs({"a": torch.ones(1), "b": torch.zeros(1)}, [torch.ones(1), torch.zeros(1)], flat=True).ok
    res = compare_outputs({"a": torch.ones(1)}, [torch.ones(1), torch.ones(1)], flat=True)
    assert not res.ok and "output count differs" in res.structure
