"""``import_openai``: the same ``openai`` package, its ``types`` packages' ``__init__`` files
run on first need. Each check runs in a fresh interpreter (this one has openai imported)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from agentls.devtools.replay.command import ReplayServer


def _python(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_api_models_a_chat_never_uses_are_not_built() -> None:
    seen = _python("""
        import json, sys
        from agentls.llm.openai_import import import_openai
        openai = import_openai()
        lazy = sorted(m for m in sys.modules if m.startswith("openai.types"))
        client = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
        client.chat.completions
        print(json.dumps({"lazy": lazy, "evals": "openai.types.eval_create_params" in sys.modules,
                          "hook_left": any(type(f).__name__ == "_LazyTypesFinder"
                                           for f in sys.meta_path)}))
    """)
    eager = _python("""
        import json, sys, openai
        print(json.dumps({"eager": sorted(m for m in sys.modules
                                          if m.startswith("openai.types"))}))
    """)
    assert not seen["evals"]
    assert len(seen["lazy"]) * 3 < len(eager["eager"])
    assert not seen["hook_left"], "the finder must be gone once openai is imported"


def test_a_deferred_package_answers_every_name_an_eager_import_has() -> None:
    seen = _python("""
        import json
        from agentls.llm.openai_import import import_openai
        openai = import_openai()
        types = openai.types
        completion = types.Completion                   # runs types/__init__.py, once
        same = completion is openai.types.completion.Completion
        names = sorted(n for n in dir(types) if not n.startswith("_"))
        try:
            types.NoSuchModel
            missing = "no error"
        except AttributeError as exc:
            missing = str(exc)
        print(json.dumps({"same": same, "names": names, "missing": missing,
                          "all": sorted(getattr(openai.types.chat, "__all__", []))}))
    """)
    eager = _python("""
        import json, openai
        print(json.dumps({"names": sorted(n for n in dir(openai.types) if not n.startswith("_")),
                          "all": sorted(getattr(openai.types.chat, "__all__", []))}))
    """)
    assert seen["same"]
    assert seen["names"] == eager["names"]
    assert seen["all"] == eager["all"]
    assert "has no attribute 'NoSuchModel'" in seen["missing"]


def test_no_types_package_binds_a_submodule_name_to_something_else() -> None:
    """The rule the deferral rests on (a missing name that is a submodule is answered with
    the submodule), checked against the installed openai: if a future version breaks it,
    this fails before a person does."""
    clashes = _python("""
        import json, pkgutil, sys, types as t
        import openai
        clashes = []
        for name, module in list(sys.modules.items()):
            if not name.startswith("openai.types") or not hasattr(module, "__path__"):
                continue
            for info in pkgutil.iter_modules(module.__path__):
                bound = module.__dict__.get(info.name)
                if bound is not None and not (isinstance(bound, t.ModuleType)
                                              and bound.__name__ == f"{name}.{info.name}"):
                    clashes.append(f"{name}.{info.name}")
        print(json.dumps(clashes))
    """)
    assert clashes == []


def test_a_streamed_chat_over_real_http_with_the_deferred_types() -> None:
    script = {"steps": [{"times": "*", "reply": {"text": "hello from the scripted model"}}]}
    with ReplayServer(script) as model:
        seen = _python(f"""
            import json
            from agentls.llm.openai_import import import_openai
            openai = import_openai()
            client = openai.OpenAI(api_key="k", base_url={model.base_url!r}, max_retries=0)
            stream = client.chat.completions.create(
                model="scripted-model", messages=[{{"role": "user", "content": "hi"}}], stream=True)
            chunks = list(stream)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            print(json.dumps({{"text": text, "chunk": type(chunks[0]).__module__}}))
        """)
    assert seen["text"] == "hello from the scripted model"
    assert seen["chunk"] == "openai.types.chat.chat_completion_chunk"
