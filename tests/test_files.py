"""fglcore.files: atomic writes leave the old file or the new one, cached tensors are computed once and recomputed
when damaged, and the keys and hashes tell different contents apart."""
from __future__ import annotations

import hashlib

import pytest
import torch

from fglcore.files import cached_tensor, json_key, save_atomic, sha256_file, update_with_tensor, write_atomic


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "deep" / "file.pt"
    save_atomic({"a": torch.ones(2)}, path)

    def half_then_fail(partial):
        partial.write_bytes(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, half_then_fail)
    assert torch.equal(torch.load(path, weights_only=True)["a"], torch.ones(2))
    assert [p.name for p in path.parent.iterdir()] == ["file.pt"]


def test_a_cached_tensor_is_computed_once_and_again_when_damaged_or_of_another_shape(tmp_path):
    path, calls = tmp_path / "t.pt", []

    def compute():
        calls.append(1)
        return torch.arange(6.0).reshape(2, 3)

    first = cached_tensor(path, (2, 3), compute)
    assert torch.equal(cached_tensor(path, (2, 3), compute), first) and len(calls) == 1
    path.write_bytes(b"damaged")
    assert torch.equal(cached_tensor(path, (2, 3), compute), first) and len(calls) == 2
    save_atomic(torch.zeros(3, 2), path)
    assert torch.equal(cached_tensor(path, (2, 3), compute), first) and len(calls) == 3


def test_keys_and_hashes_tell_contents_apart(tmp_path):
    assert json_key({"a": 1, "b": [2]}) == json_key({"b": [2], "a": 1})  # key order does not matter
    assert json_key({"a": 1}) != json_key({"a": 2})

    def digest(label, tensor):
        d = hashlib.sha256()
        update_with_tensor(d, label, tensor)
        return d.hexdigest()

    x = torch.tensor([1, 2, 3, 4])
    assert digest("x", x) == digest("x", x.clone())
    assert digest("x", x) != digest("x", x.reshape(2, 2))  # same bytes, other shape
    assert digest("x", x) != digest("x", x.to(torch.int32))  # same values, other dtype
    assert digest("x", x) != digest("y", x)
    assert digest("x", x.to_sparse()) == digest("x", x)  # a sparse tensor hashes as its dense values

    (tmp_path / "f").write_bytes(b"abc")
    assert sha256_file(tmp_path / "f") == hashlib.sha256(b"abc").hexdigest()
