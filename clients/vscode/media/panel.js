// AgentLS chat panel (webview). Loaded with a nonce under a strict CSP. Untrusted text is
// set with textContent; the only innerHTML is markdown the extension rendered with raw HTML
// disabled (src/pure/markdown.ts).
// @ts-check
(function () {
  // eslint-disable-next-line no-undef
  const vscode = acquireVsCodeApi();
  const log = /** @type {HTMLElement} */ (document.getElementById("log"));
  const empty = /** @type {HTMLElement} */ (document.getElementById("empty"));
  const form = /** @type {HTMLFormElement} */ (document.getElementById("ask"));
  const input = /** @type {HTMLTextAreaElement} */ (document.getElementById("prompt"));
  const send = /** @type {HTMLButtonElement} */ (document.getElementById("send"));
  const cancel = /** @type {HTMLButtonElement} */ (document.getElementById("cancel"));
  let firstTextReported = new Set();

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function renderPart(part) {
    if (part.type === "html") {
      const div = el("div", "answer");
      div.innerHTML = part.html;
      return div;
    }
    if (part.type === "tool") {
      const details = el("details", "tool");
      const state = part.ok === undefined ? "running" : part.ok ? "ok" : "failed";
      details.classList.add(state);
      const summary = el("summary");
      summary.append(el("span", "tool-icon", part.ok === undefined ? "⋯" : part.ok ? "✓" : "✗"));
      summary.append(el("span", "tool-name", part.name));
      if (part.summary) summary.append(el("span", "tool-summary", part.summary));
      details.append(summary, el("pre", "tool-args", part.arguments));
      return details;
    }
    return el("div", "note " + part.level, part.text);
  }

  function render(view) {
    const open = new Set(Array.from(log.querySelectorAll("details[open]"))
      .map((d) => d.getAttribute("data-key")));
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    log.textContent = "";
    empty.hidden = view.turns.length > 0;
    for (const turn of view.turns) {
      const section = el("section", "turn " + turn.state);
      section.dataset.turn = String(turn.id);
      section.append(el("div", "prompt", turn.prompt));
      turn.parts.forEach((part, i) => {
        const node = renderPart(part);
        if (node.tagName === "DETAILS") {
          const key = turn.id + ":" + i;
          node.setAttribute("data-key", key);
          if (open.has(key)) node.setAttribute("open", "");
        }
        section.append(node);
      });
      if (turn.editOutcome) {
        const cls = turn.editOutcome.startsWith("Edit applied") ? "applied" :
          turn.editOutcome.startsWith("Edit not applied") ? "discarded" : "proposed";
        section.append(el("div", "edit-outcome " + cls, turn.editOutcome));
      }
      if (turn.status) section.append(el("div", "status", turn.status));
      log.append(section);
      if (!firstTextReported.has(turn.id) && turn.parts.some((p) => p.type === "html")) {
        firstTextReported.add(turn.id);
        vscode.postMessage({ type: "firstText", turn: turn.id });
      }
    }
    cancel.hidden = !view.running;
    send.textContent = view.turns.length ? "Send follow-up" : "Send";
    if (atBottom) log.scrollTop = log.scrollHeight;
  }

  window.addEventListener("message", (event) => {
    const message = event.data;
    if (message && message.type === "view") {
      if (message.reset) firstTextReported = new Set();
      render(message.view);
    }
    if (message && message.type === "focusInput") input.focus();
  });

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const prompt = input.value.trim();
    if (!prompt) return;
    vscode.postMessage({ type: "send", prompt });
    input.value = "";
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  cancel.addEventListener("click", () => vscode.postMessage({ type: "cancel" }));
  log.addEventListener("click", (event) => {
    const target = /** @type {HTMLElement} */ (event.target);
    if (target.classList.contains("copy")) {
      const code = target.parentElement && target.parentElement.querySelector("code");
      vscode.postMessage({ type: "copy", text: code ? code.textContent : "" });
      target.textContent = "Copied";
      setTimeout(() => { target.textContent = "Copy"; }, 1500);
    }
  });
  vscode.postMessage({ type: "ready" });
})();
