"""What the device server and its clients agree on, checked field by field: an upload's
framing, runtimes, device names, the token, a registration."""
from __future__ import annotations

import json

import pytest

from converter.devices.protocol import (MAGIC, browser_of, check_name, pack, parse_runtime,
                                        token_matches, unpack)
from converter.devices.registry import Registry, check_registration
from converter.errors import ConverterError

from .serving import registration

GOOD = pack({"device": "phone", "deviceType": "cpu", "inputs": {"x": "in0.bin"}},
            {"model.webnn": b"graph", "model.weights": b"w", "in0.bin": b"1234"})


def test_a_good_upload_round_trips():
    header, files = unpack(GOOD)
    assert header["device"] == "phone" and header["inputs"] == {"x": "in0.bin"}
    assert files == {"model.webnn": b"graph", "model.weights": b"w", "in0.bin": b"1234"}
    header, _ = unpack(pack({"inputs": {}, "runs": 1000, "warmup": 0},
                            {"model.webnn": b"graph"}))
    assert (header["runs"], header["warmup"]) == (1000, 0)


def _framed(header: dict, tail: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return MAGIC + len(text).to_bytes(4, "little") + text + tail


_LISTED = [["model.webnn", 0]]
BAD = {
    "empty": b"",
    "no magic": b"GET / HTTP/1.1\r\n",
    "header longer than the body": MAGIC + (1000).to_bytes(4, "little") + b"{}",
    "header over a MiB": MAGIC + (2 << 20).to_bytes(4, "little") + b"{}" * (1 << 20),
    "header not JSON": MAGIC + (3).to_bytes(4, "little") + b"{{{",
    "header not UTF-8": MAGIC + (2).to_bytes(4, "little") + b"\xff\xfe",
    "header a list": _framed([]),  # type: ignore[arg-type]
    "deep header": MAGIC + (20000).to_bytes(4, "little") + b"[" * 10000 + b"]" * 10000,
    "device not a name": _framed({"device": "<b>", "files": _LISTED, "inputs": {}}),
    "device not a string": _framed({"device": 7, "files": _LISTED, "inputs": {}}),
    "unknown deviceType": _framed({"deviceType": "tpu", "files": _LISTED, "inputs": {}}),
    "no file list": _framed({"inputs": {}}),
    "entry not a pair": _framed({"files": [["model.webnn"]], "inputs": {}}),
    "negative size": _framed({"files": [["model.webnn", -1]], "inputs": {}}),
    "size a float": _framed({"files": [["model.webnn", 1.0]], "inputs": {}}, b"x"),
    "size a bool": _framed({"files": [["model.webnn", True]], "inputs": {}}, b"x"),
    "path traversal": _framed({"files": [["../model.webnn", 0]], "inputs": {}}),
    "other name": _framed({"files": [["model.webnn", 0], ["run.js", 0]], "inputs": {}}),
    "named twice": _framed({"files": [["model.webnn", 0], ["model.webnn", 0]], "inputs": {}}),
    "file cut short": _framed({"files": [["model.webnn", 10]], "inputs": {}}, b"abc"),
    "bytes left over": _framed({"files": _LISTED, "inputs": {}}, b"extra"),
    "no graph": _framed({"files": [["in0.bin", 0]], "inputs": {"x": "in0.bin"}}),
    "input file missing": _framed({"files": _LISTED, "inputs": {"x": "in0.bin"}}),
    "input not a file name": _framed({"files": _LISTED, "inputs": {"x": "model.webnn"}}),
    "inputs a list": _framed({"files": _LISTED, "inputs": []}),
    "too many files": _framed({"files": [["in0.bin", 0]] * 10_001, "inputs": {}}),
    # a bench's repeated runs: whole numbers, bounded (the page would loop on anything)
    "runs zero": _framed({"files": _LISTED, "inputs": {}, "runs": 0}),
    "runs huge": _framed({"files": _LISTED, "inputs": {}, "runs": 10**9}),
    "runs a string": _framed({"files": _LISTED, "inputs": {}, "runs": "5"}),
    "runs a bool": _framed({"files": _LISTED, "inputs": {}, "runs": True}),
    "warmup negative": _framed({"files": _LISTED, "inputs": {}, "runs": 1, "warmup": -1}),
    "warmup a float": _framed({"files": _LISTED, "inputs": {}, "warmup": 1.5}),
}


@pytest.mark.parametrize("body", BAD.values(), ids=BAD.keys())
def test_a_bad_upload_is_refused_in_one_line(body):
    with pytest.raises(ConverterError) as caught:
        unpack(body)
    assert "\n" not in caught.value.line() and len(caught.value.line()) < 300


@pytest.mark.parametrize("runtime, parsed", [
    ("device", (None, None)), ("device:phone", ("phone", None)),
    ("device:phone:gpu", ("phone", "gpu")), ("device:a.b-c_1", ("a.b-c_1", None))])
def test_runtimes(runtime, parsed):
    assert parse_runtime(runtime) == parsed


@pytest.mark.parametrize("runtime", ["device:", "device:phone:tpu", "device:a:cpu:x",
                                     "device:<x>", "device:" + "a" * 41, "devices:a"])
def test_bad_runtimes(runtime):
    with pytest.raises(ConverterError):
        parse_runtime(runtime)


@pytest.mark.parametrize("name", ["", ".", "-a", "a b", "a/b", "a\nb", "é", None, 3, "a" * 41])
def test_bad_names(name):
    with pytest.raises(ConverterError, match="is not a device name"):
        check_name(name)


def test_token_comparison():
    assert token_matches("abc", "abc")
    assert not token_matches("abd", "abc") and not token_matches("", "abc")
    assert not token_matches("ab\udc80", "abc")  # not even encodable: no exception


@pytest.mark.parametrize("agent, browser", [
    ("Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 Chrome/141.0.0.0 Mobile Safari/537.36",
     "Chrome 141"),
    ("Mozilla/5.0 (Windows NT 10.0) Chrome/140.0.0.0 Safari/537.36 Edg/140.0.0.0", "Edge 140"),
    ("Mozilla/5.0 HeadlessChrome/153.0.8010.0", "HeadlessChrome 153"),
    ("Mozilla/5.0 (iPhone) Version/18.0 Mobile/15E148 Safari/604.1", "Safari 18"),
    ("curl/8", "unknown browser")])
def test_browser_of(agent, browser):
    assert browser_of(agent) == browser


def test_a_registration_is_read_whole():
    agent, platform, limits, refused = check_registration(
        registration(refused={"gpu": "NotSupportedError: " + "x" * 1000}))
    assert agent.startswith("Mozilla") and platform == "Linux" and list(limits) == ["cpu"]
    assert len(refused["gpu"]) == 512


def test_names_are_unique(tmp_path):
    registry = Registry(tmp_path)
    registry.devices = {"a": object(), "a-2": object(), "device-1": object()}
    assert registry.free_name("a") == "a-3"
    assert registry.free_name(None) == "device-2"
    registry.devices["b" * 40] = object()
    assert registry.free_name("b" * 40) == "b" * 34 + "-2"
