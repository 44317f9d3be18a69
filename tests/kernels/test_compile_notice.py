"""The one-line notice while our kernels compile (``_kernels/compile_notice.py``)."""

import time
from types import SimpleNamespace

from numba.core import event

from spacy_crf._kernels.compile_notice import MESSAGE, CompileNotice


def compile_event(module, kind):
    dispatcher = SimpleNamespace(py_func=SimpleNamespace(__module__=module))
    return event.Event("numba:compile", kind, data={"dispatcher": dispatcher})


def test_a_long_compile_of_ours_is_announced_once(capsys):
    notice = CompileNotice(delay=0.05)
    notice.on_start(compile_event("spacy_crf._kernels.chain", event.EventStatus.START))
    notice.on_start(compile_event("spacy_crf._kernels.chain", event.EventStatus.START))  # nested
    time.sleep(0.3)
    notice.on_end(compile_event("spacy_crf._kernels.chain", event.EventStatus.END))
    notice.on_end(compile_event("spacy_crf._kernels.chain", event.EventStatus.END))
    notice.on_start(compile_event("spacy_crf._kernels.tree", event.EventStatus.START))
    time.sleep(0.3)
    notice.on_end(compile_event("spacy_crf._kernels.tree", event.EventStatus.END))
    assert capsys.readouterr().err == MESSAGE + "\n"  # once per process


def test_a_quick_compile_and_other_packages_say_nothing(capsys):
    notice = CompileNotice(delay=0.2)
    notice.on_start(compile_event("spacy_crf._kernels.chain", event.EventStatus.START))
    notice.on_end(compile_event("spacy_crf._kernels.chain", event.EventStatus.END))
    notice.on_start(compile_event("other_package.kernels", event.EventStatus.START))
    time.sleep(0.4)
    notice.on_end(compile_event("other_package.kernels", event.EventStatus.END))
    assert capsys.readouterr().err == ""
