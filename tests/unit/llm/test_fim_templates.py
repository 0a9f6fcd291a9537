"""Each FIM template, chosen by model name and overridable."""

from __future__ import annotations

import pytest

from agentls.llm.fim_templates import ContextFile, TemplateError, template_for

FILES = [ContextFile("src/util.py", "def helper():\n    return 1")]


@pytest.mark.parametrize(("model", "name"), [
    ("qwen2.5-coder:1.5b-base", "qwen"), ("Qwen/Qwen2.5-Coder-7B", "qwen"),
    ("bigcode/starcoder2-3b", "starcoder2"), ("deepseek-coder:6.7b-base", "deepseek"),
    ("codellama:7b-code", "codellama"), ("codestral-latest", "codestral"),
    ("gpt-4o-mini", None), ("llama3.1", None)])
def test_chosen_by_model_name(model: str, name: str | None) -> None:
    template = template_for(model)
    assert (template.name if template else None) == name


def test_qwen_plain_and_repo_level() -> None:
    qwen = template_for("qwen2.5-coder")
    assert qwen is not None
    assert qwen.render("a = ", "\nb") == "<|fim_prefix|>a = <|fim_suffix|>\nb<|fim_middle|>"
    assert qwen.render("a = ", "\nb", path="src/x.py", repo="proj", files=FILES) == (
        "<|repo_name|>proj\n<|file_sep|>src/util.py\ndef helper():\n    return 1\n"
        "<|file_sep|>src/x.py\n<|fim_prefix|>a = <|fim_suffix|>\nb<|fim_middle|>")
    assert "<|file_sep|>" in qwen.stop and "<|endoftext|>" in qwen.stop


def test_starcoder2_plain_and_repo_level() -> None:
    star = template_for("starcoder2:3b")
    assert star is not None
    assert star.render("p", "s") == "<fim_prefix>p<fim_suffix>s<fim_middle>"
    assert star.render("p", "s", path="x.py", repo="r", files=FILES) == (
        "<repo_name>r<file_sep>src/util.py\ndef helper():\n    return 1"
        "<file_sep><fim_prefix>x.py\np<fim_suffix>s<fim_middle>")


def test_deepseek_codellama_codestral() -> None:
    deepseek, llama, codestral = (template_for(m) for m in (
        "deepseek-coder", "codellama", "codestral"))
    assert deepseek is not None and llama is not None and codestral is not None
    assert deepseek.render("p", "s") == "<｜fim▁begin｜>p<｜fim▁hole｜>s<｜fim▁end｜>"
    assert llama.render("p", "s") == "<PRE> p <SUF>s <MID>"
    assert codestral.render("p", "s") == "[SUFFIX]s[PREFIX]p"
    # no repo-level tokens: the other files are commented headers in the prefix
    assert deepseek.render("p", "s", files=FILES, comment="#").startswith(
        "<｜fim▁begin｜># src/util.py\ndef helper():\n    return 1\n\np")


def test_override_by_name_and_custom_text() -> None:
    assert template_for("gpt-4o", "StarCoder2").name == "starcoder2"  # type: ignore[union-attr]
    custom = template_for("any", "<pre>{prefix}<suf>{suffix}<mid>")
    assert custom is not None
    # braces in the code are left alone, placeholders in the code are not expanded again
    assert custom.render("x = {prefix}", "}") == "<pre>x = {prefix}<suf>}<mid>"
    with pytest.raises(TemplateError, match="neither a known template"):
        template_for("any", "zeta")
