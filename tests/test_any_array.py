"""Any CPU array goes in without a copy: NumPy arrays, anything with DLPack (a PyTorch CPU
tensor), `__array_interface__` or the buffer protocol (memoryview, array.array), as inputs
and as out=; an array in a GPU's memory is refused with a clear error; strided inputs are
read right, copied once per call, which the report says."""

import array
import threading

import numpy as np
import pytest

import polyimage
from polyimage import Float, Function, Image, Int, Interval, Parameter, Variable
from polyimage.errors import ArgumentTypeError
from polyimage.graph.arguments import as_cpu_array


def _doubled_pipeline():
    """out(i, j) = 2 * img(i, j) + i over an R x C float32 image."""
    R, C = Parameter(Int, "R"), Parameter(Int, "C")
    i, j = Variable(Int, "i"), Variable(Int, "j")
    img = Image(Float, "img", [R, C])
    out = Function(([i, j], [Interval(Int, 0, R - 1), Interval(Int, 0, C - 1)]), Float, "out")
    out.defn = [img(i, j) * 2.0 + i]
    return polyimage.compile([out])


@pytest.fixture(scope="module")
def doubled():
    return _doubled_pipeline()


def _expected(values):
    values = np.asarray(values, np.float32)
    return values * np.float32(2) + np.arange(values.shape[0], dtype=np.float32)[:, None]


class DLPackOnly:
    """A stand-in for a tensor of another library that speaks only DLPack."""

    def __init__(self, array, device=(1, 0)):
        self.array, self.device = array, device

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device


def _address(array) -> int:
    return array.__array_interface__["data"][0]


def test_a_memoryview_and_an_array_array_go_in_without_a_copy(doubled):
    flat = array.array("f", [float(k) for k in range(12)])
    view = memoryview(flat).cast("B").cast("f", shape=[3, 4])
    address = flat.buffer_info()[0]
    assert _address(as_cpu_array(view, "image img")) == address
    np.testing.assert_array_equal(doubled(img=view), _expected(np.asarray(view)))
    one_row = array.array("f", [1.0, 2.0, 3.0])
    assert _address(as_cpu_array(one_row, "image img")) == one_row.buffer_info()[0]


def test_a_dlpack_array_goes_in_and_out_without_a_copy(doubled):
    values = np.random.default_rng(1).random((5, 7), dtype=np.float32)
    source = DLPackOnly(values)
    assert _address(as_cpu_array(source, "image img")) == _address(values)
    target = np.zeros((5, 7), np.float32)
    returned = doubled(img=source, out=DLPackOnly(target))
    np.testing.assert_array_equal(target, _expected(values))
    assert np.shares_memory(returned, target)


def test_out_may_be_a_memoryview(doubled):
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    flat = array.array("f", [0.0] * 6)
    doubled(img=values, out=memoryview(flat).cast("B").cast("f", shape=[2, 3]))
    np.testing.assert_array_equal(np.asarray(flat).reshape(2, 3), _expected(values))


def test_strided_inputs_give_the_right_result(doubled):
    base = np.random.default_rng(2).random((9, 14), dtype=np.float32)
    for strided in (base[::2, ::3], base.T, base[:, 1:-1]):
        assert not strided.flags.c_contiguous
        np.testing.assert_array_equal(doubled(img=strided), _expected(strided))


def _copy_notes(pipe) -> list:
    return [line for line in pipe.report().splitlines() if "not C-contiguous" in line]


def test_the_report_says_when_a_call_copied_a_strided_input():
    pipe = _doubled_pipeline()
    base = np.random.default_rng(3).random((9, 14), dtype=np.float32)
    pipe(img=base)
    assert _copy_notes(pipe) == []
    strided = base[::2, ::3]
    pipe(img=strided)
    (note,) = _copy_notes(pipe)
    assert note.startswith("input img was not C-contiguous: copied once per call")
    assert f"shape {strided.shape}" in note and f"strides {strided.strides}" in note


def test_calls_copying_strided_inputs_at_once_leave_one_note():
    pipe = _doubled_pipeline()
    base = np.random.default_rng(4).random((24, 30), dtype=np.float32)
    views = [base[::2, ::3], base.T, base[:, 1:-1], base[1::3, ::2]]
    results = [None] * len(views)

    def call(k):
        results[k] = pipe(img=views[k])

    threads = [threading.Thread(target=call, args=(k,)) for k in range(len(views))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for view, got in zip(views, results):
        np.testing.assert_array_equal(got, _expected(view))
    (note,) = _copy_notes(pipe)
    described = [f"(shape {v.shape}, strides {v.strides})" for v in views]
    assert any(d in note for d in described), note


@pytest.mark.parametrize(
    "gpu",
    [
        DLPackOnly(np.zeros((2, 2), np.float32), device=(2, 0)),
        type("CudaArray", (), {"__cuda_array_interface__": {}})(),
    ],
    ids=["dlpack-cuda", "cuda-array-interface"],
)
def test_an_array_in_gpu_memory_is_refused_naming_the_argument(doubled, gpu):
    with pytest.raises(ArgumentTypeError, match=r"image img is in another device's memory"):
        doubled(img=gpu)


def test_a_torch_cpu_tensor_goes_in_and_out_without_a_copy(doubled):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    tensor = torch.rand(4, 6, dtype=torch.float32)
    assert _address(as_cpu_array(tensor, "image img")) == tensor.data_ptr()
    target = torch.zeros(4, 6, dtype=torch.float32)
    doubled(img=tensor, out=target)
    np.testing.assert_array_equal(target.numpy(), _expected(tensor.numpy()))
