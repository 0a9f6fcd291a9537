// AgentLS chat panel (webview). Loaded with a nonce under a strict CSP. Untrusted text is
// set with textContent; the only innerHTML is markdown the extension rendered with raw HTML
// disabled and code highlighted by highlight.js (src/pure/markdown.ts).
// The extension sends the whole view once ("view"), then operations ("ops", src/pure/view.ts)
// that touch only what changed: streamed text is appended to its turn, never redrawn, so a
// selection in the panel survives streaming and a chunk costs the same at turn 1 and 200.
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
  const header = /** @type {HTMLElement} */ (document.getElementById("header"));
  const modelButton = /** @type {HTMLButtonElement} */ (document.getElementById("model"));
  const modeSelect = /** @type {HTMLSelectElement} */ (document.getElementById("mode"));
  const mentionList = /** @type {HTMLElement} */ (document.getElementById("mentions"));
  let firstTextReported = new Set();
  let timings = false;
  /** @type {Map<number, number[]>} per turn: ms spent on each "ops" message (timings only) */
  const chunkTimes = new Map();

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function codeHead(lang) {
    const head = el("div", "code-head");
    head.append(el("span", "lang", lang || "text"));
    const actions = el("span", "code-actions");
    for (const [action, label] of [["copy", "Copy"], ["insert", "Insert"], ["apply", "Apply"]]) {
      const button = el("button", "code-action", label);
      button.dataset.action = action;
      button.disabled = true; // until the block is complete
      actions.append(button);
    }
    head.append(actions);
    return head;
  }

  function setTail(answer, tail) {
    const node = /** @type {HTMLElement} */ (answer.querySelector(":scope > .tail"));
    if (!tail) {
      node.textContent = "";
      return;
    }
    if (tail.kind === "html") {
      node.innerHTML = tail.html;
      return;
    }
    const block = el("div", "code streaming");
    const code = el("code", undefined, tail.code);
    const pre = el("pre");
    pre.append(code);
    block.append(codeHead(tail.lang), pre);
    node.replaceChildren(block);
  }

  function renderPart(part) {
    if (part.type === "md") {
      const div = el("div", "answer");
      const blocks = el("div", "blocks");
      blocks.innerHTML = part.html;
      div.append(blocks, el("div", "tail"));
      setTail(div, part.tail);
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

  function setFooter(section, turn) {
    section.className = "turn " + turn.state;
    let outcome = section.querySelector(":scope > .edit-outcome");
    if (turn.editOutcome) {
      if (!outcome) {
        outcome = el("div");
        section.querySelector(":scope > .status").before(outcome);
      }
      const cls = turn.editOutcome.startsWith("Edit applied") ? "applied" :
        turn.editOutcome.startsWith("Edit not applied") ? "discarded" : "proposed";
      outcome.className = "edit-outcome " + cls;
      outcome.textContent = turn.editOutcome;
    } else if (outcome) {
      outcome.remove();
    }
    const status = /** @type {HTMLElement} */ (section.querySelector(":scope > .status"));
    status.textContent = turn.status;
    status.hidden = !turn.status;
    let answered = section.querySelector(":scope > .answered-by");
    if (turn.answeredBy) {
      if (!answered) {
        answered = el("div", "answered-by");
        section.append(answered);
      }
      answered.textContent = turn.answeredBy;
    } else if (answered) {
      answered.remove();
    }
  }

  /** What was attached to the turn (chips) and what was refused, under the prompt. */
  function setHead(section, head) {
    section.querySelector(":scope > .chips")?.remove();
    const chips = head.chips ?? [];
    const refused = head.refused ?? [];
    if (!chips.length && !refused.length) return;
    const row = el("div", "chips");
    for (const chip of chips) {
      const facts = [chip.range ? "lines " + chip.range : chip.lines ? chip.lines + " lines" : "",
                     chip.size !== undefined ? formatSize(chip.size) : ""].filter(Boolean).join(" · ");
      const node = el("span", "chip " + (chip.kind || "file"));
      node.append(el("span", "chip-kind", chip.kind || "file"), el("span", "chip-name", chip.name));
      if (facts) node.append(el("span", "chip-facts", facts));
      node.title = [chip.name, facts, chip.note].filter(Boolean).join(" — ");
      if (chip.note) node.classList.add("trimmed");
      row.append(node);
    }
    for (const item of refused) {
      const node = el("span", "chip refused");
      node.append(el("span", "chip-kind", "not attached"), el("span", "chip-name", item.name));
      node.title = item.reason;
      row.append(node);
      row.append(el("span", "refused-reason", item.reason));
    }
    section.querySelector(":scope > .prompt").after(row);
  }

  function formatSize(bytes) {
    return bytes < 1024 ? bytes + " B" : bytes < 1024 * 1024 ? (bytes / 1024).toFixed(1) + " KB"
      : (bytes / 1024 / 1024).toFixed(1) + " MB";
  }

  function renderTurn(turn) {
    const section = el("section", "turn " + turn.state);
    section.dataset.turn = String(turn.id);
    section.append(el("div", "prompt", turn.prompt));
    setHead(section, turn);
    const parts = el("div", "parts");
    for (const part of turn.parts) parts.append(renderPart(part));
    section.append(parts, el("div", "status"));
    setFooter(section, turn);
    if (turn.parts.some((p) => p.type === "md")) reportFirstText(turn.id);
    return section;
  }

  function reportFirstText(turnId) {
    if (firstTextReported.has(turnId)) return;
    firstTextReported.add(turnId);
    vscode.postMessage({ type: "firstText", turn: turnId });
  }

  function section(turnId) {
    return /** @type {HTMLElement | null} */ (log.querySelector(`section[data-turn="${turnId}"]`));
  }

  function setRunning(running, turns) {
    cancel.hidden = !running;
    send.textContent = turns ? "Send follow-up" : "Send";
    empty.hidden = turns > 0;
    log.hidden = turns === 0;
  }

  function turnCount() {
    return log.querySelectorAll(":scope > section.turn").length;
  }

  function atBottom() {
    return log.scrollHeight - log.scrollTop - log.clientHeight < 40;
  }

  // Follow the conversation while the person is at its end; once they scroll up to read,
  // stay where they are until they scroll back down.
  let stick = true;
  log.addEventListener("scroll", () => { stick = atBottom(); });
  function keepAtBottom() {
    if (stick) log.scrollTop = log.scrollHeight;
  }

  // --- earlier turns: a reopened session shows its latest page; this control the ones before

  /** The "Earlier turns" control at the top of the log (null when there are none). */
  function earlierControl(more, error) {
    if (!more) return null;
    const row = el("div", "earlier");
    const button = el("button", "earlier-button secondary", `Earlier turns (${more} more)`);
    button.type = "button";
    button.title = "Show the turns before these (a page at a time)";
    row.append(button);
    if (error) row.append(el("div", "note error", error));
    return row;
  }

  function setEarlier(more, error) {
    log.querySelector(":scope > .earlier")?.remove();
    const control = earlierControl(more, error);
    if (control) log.prepend(control);
  }

  /** Earlier turns put above those drawn; what the person was looking at stays in place. */
  function prependTurns(op) {
    const fromBottom = log.scrollHeight - log.scrollTop;
    const first = log.querySelector(":scope > section.turn");
    const nodes = document.createDocumentFragment();
    nodes.append(...op.turns.map(renderTurn));
    if (first) first.before(nodes);
    else log.append(nodes);
    setEarlier(op.more, op.error);
    log.scrollTop = log.scrollHeight - fromBottom;
    stick = atBottom();
    setRunning(!cancel.hidden, turnCount());
  }

  log.addEventListener("click", (event) => {
    const button = /** @type {HTMLElement} */ (event.target).closest("button.earlier-button");
    if (!(button instanceof HTMLButtonElement) || button.disabled) return;
    button.disabled = true;
    button.textContent = "Loading earlier turns…";
    button.parentElement?.querySelector(".note")?.remove();
    vscode.postMessage({ type: "earlier" });
  });

  function render(view) {
    const open = new Set(Array.from(log.querySelectorAll("details[open]"))
      .map((d) => d.closest("section")?.dataset.turn + ":" +
        Array.prototype.indexOf.call(d.parentElement?.children ?? [], d)));
    log.replaceChildren(...view.turns.map(renderTurn));
    setEarlier(view.earlier ?? 0);
    for (const key of open) {
      const [turn, index] = key.split(":");
      const parts = section(turn)?.querySelector(":scope > .parts");
      parts?.children[Number(index)]?.setAttribute("open", "");
    }
    setRunning(view.running, view.turns.length);
    stick = true; // a conversation opened or started: its end
    keepAtBottom();
  }

  function apply(op) {
    if (op.op === "running") {
      setRunning(op.running, turnCount());
      return;
    }
    if (op.op === "earlier") {
      prependTurns(op);
      return;
    }
    if (op.op === "turn") {
      section(op.turn.id)?.remove();
      log.append(renderTurn(op.turn));
      setRunning(!cancel.hidden, turnCount());
      return;
    }
    const turn = section(op.turn);
    if (!turn) return;
    if (op.op === "footer") {
      setFooter(turn, op);
      return;
    }
    if (op.op === "head") {
      setHead(turn, op);
      return;
    }
    const parts = /** @type {HTMLElement} */ (turn.querySelector(":scope > .parts"));
    if (op.op === "part") {
      const node = renderPart(op.part);
      const old = parts.children[op.index];
      if (old) old.replaceWith(node);
      else parts.append(node);
      if (op.part.type === "md") reportFirstText(op.turn);
      return;
    }
    if (op.op === "md") {
      const answer = parts.children[op.index];
      if (!answer) return;
      if (op.append) answer.querySelector(":scope > .blocks")?.insertAdjacentHTML("beforeend", op.append);
      if (op.tail !== undefined) setTail(answer, op.tail);
      if (op.codeAppend) answer.querySelector(":scope > .tail code")?.append(op.codeAppend);
      reportFirstText(op.turn);
    }
  }

  window.addEventListener("message", (event) => {
    const message = event.data;
    if (!message) return;
    if (message.type === "view") {
      if (message.reset) firstTextReported = new Set();
      timings = Boolean(message.timings);
      const started = performance.now();
      render(message.view);
      if (timings) {
        void log.offsetHeight; // the layout, as a person waits for it
        vscode.postMessage({ type: "drawn", ms: performance.now() - started });
      }
    } else if (message.type === "ops") {
      const started = performance.now();
      for (const op of message.ops) apply(op);
      keepAtBottom();
      if (timings) recordChunk(message.ops, performance.now() - started);
    } else if (message.type === "options") {
      showOptions(message.options);
    } else if (message.type === "mentionItems") {
      if (message.id === mentionRequest) showMentions(message.items);
    } else if (message.type === "focusInput") {
      input.focus();
    } else if (message.type === "setInput") {
      input.value = message.text;
      input.focus();
    }
  });

  /** Benchmark only (AGENTLS_VSCODE_TIMINGS): the time each streamed chunk took here. */
  function recordChunk(ops, ms) {
    for (const op of ops) {
      if (op.op === "md") {
        const list = chunkTimes.get(op.turn) ?? [];
        list.push(ms);
        chunkTimes.set(op.turn, list);
        break;
      }
    }
    for (const op of ops) {
      if (op.op === "footer" && op.state !== "running" && chunkTimes.has(op.turn)) {
        vscode.postMessage({ type: "chunkTimes", turn: op.turn, ms: chunkTimes.get(op.turn) });
        chunkTimes.delete(op.turn);
      }
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const prompt = input.value.trim();
    if (!prompt) return;
    // The mentions picked from the list and still in the text go with it, as the server's
    // references (it resolves them); the text is sent as typed.
    const references = [];
    for (const [text, reference] of picked) if (prompt.includes(text)) references.push(reference);
    picked.clear();
    closeMentions();
    vscode.postMessage({ type: "send", prompt, references });
    input.value = "";
  });
  input.addEventListener("keydown", (event) => {
    if (!mentionList.hidden && mentionItems.length) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        selectMention((mentionIndex + step + mentionItems.length) % mentionItems.length);
        return;
      }
      if ((event.key === "Enter" || event.key === "Tab") && !event.isComposing) {
        event.preventDefault();
        acceptMention(mentionIndex);
        return;
      }
      if (event.key === "Escape") {
        event.preventDefault();
        closeMentions();
        return;
      }
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  cancel.addEventListener("click", () => vscode.postMessage({ type: "cancel" }));

  // --- the header: model and mode ---------------------------------------------------------

  function showOptions(options) {
    header.hidden = !options;
    if (!options) return;
    modelButton.textContent = options.model ? options.model + " ▾" : "model ▾";
    modelButton.title = `Model: ${options.model || "(the backend's default)"} on ${options.backend}. ` +
      "Click to choose another for this chat.";
    if (modeSelect.options.length !== options.modes.length) {
      modeSelect.replaceChildren(...options.modes.map((m) => {
        const option = el("option", undefined, m.label || m.name);
        option.value = m.name;
        option.title = m.description;
        return option;
      }));
    }
    modeSelect.value = options.mode;
    const current = options.modes.find((m) => m.name === options.mode);
    modeSelect.title = current ? current.description : "";
  }
  modelButton.addEventListener("click", () => vscode.postMessage({ type: "chooseModel" }));
  modeSelect.addEventListener("change", () => vscode.postMessage({ type: "setMode", mode: modeSelect.value }));

  // --- mentions: @ or # in the input, completed from the server (agentls/mentions) -------

  /** @type {Map<string, object>} mention text in the input -> the reference it stands for */
  const picked = new Map();
  let mentionRequest = 0;
  let mentionItems = [];
  let mentionIndex = 0;
  let mentionAt = -1; // where the trigger character is in the input
  let mentionTimer;

  function mentionBeforeCaret() {
    const before = input.value.slice(0, input.selectionStart ?? input.value.length);
    const m = /(^|\s)([@#])([^\s@#]*)$/.exec(before);
    return m ? { at: before.length - m[3].length - 1, trigger: m[2], query: m[3] } : null;
  }

  input.addEventListener("input", () => {
    const found = mentionBeforeCaret();
    clearTimeout(mentionTimer);
    if (!found) {
      closeMentions();
      return;
    }
    mentionAt = found.at;
    mentionTimer = setTimeout(() => {
      vscode.postMessage({ type: "mentions", id: ++mentionRequest, trigger: found.trigger,
                           query: found.query });
    }, 60);
  });
  input.addEventListener("blur", () => setTimeout(closeMentions, 150));

  function showMentions(items) {
    mentionItems = items.slice(0, 12);
    if (!mentionItems.length || mentionAt < 0) {
      closeMentions();
      return;
    }
    mentionList.replaceChildren(...mentionItems.map((item, i) => {
      const row = el("div", "mention");
      row.setAttribute("role", "option");
      row.id = "mention-" + i;
      row.append(el("span", "mention-label", item.label), el("span", "mention-detail", item.detail || ""));
      row.addEventListener("mousedown", (event) => {
        event.preventDefault(); // keep the focus in the input
        acceptMention(i);
      });
      return row;
    }));
    mentionList.hidden = false;
    selectMention(0);
  }

  function selectMention(index) {
    mentionIndex = index;
    Array.from(mentionList.children).forEach((row, i) => {
      row.classList.toggle("selected", i === index);
      row.setAttribute("aria-selected", String(i === index));
    });
    input.setAttribute("aria-activedescendant", "mention-" + index);
    mentionList.children[index]?.scrollIntoView({ block: "nearest" });
  }

  function acceptMention(index) {
    const item = mentionItems[index];
    const found = mentionBeforeCaret();
    if (!item || !found) return closeMentions();
    const text = item.text || found.trigger + item.label; // the server says what to insert
    const caret = input.selectionStart ?? input.value.length;
    input.value = input.value.slice(0, found.at) + text + " " + input.value.slice(caret);
    const after = found.at + text.length + 1;
    input.setSelectionRange(after, after);
    picked.set(text, item.reference);
    closeMentions();
  }

  function closeMentions() {
    mentionList.hidden = true;
    mentionList.replaceChildren();
    mentionItems = [];
    mentionAt = -1;
    input.removeAttribute("aria-activedescendant");
  }
  empty.addEventListener("click", (event) => {
    const target = /** @type {HTMLElement} */ (event.target);
    const command = target.closest("button")?.dataset.command;
    if (command) vscode.postMessage({ type: "command", command });
  });
  log.addEventListener("click", (event) => {
    const button = /** @type {HTMLElement} */ (event.target).closest("button.code-action");
    if (!(button instanceof HTMLButtonElement) || button.disabled) return;
    const block = button.closest(".code");
    const code = block?.querySelector("pre code")?.textContent ?? "";
    const lang = block?.querySelector(".lang")?.textContent ?? "";
    const action = button.dataset.action;
    vscode.postMessage({ type: "code", action, code, lang });
    if (action === "copy") {
      button.textContent = "Copied";
      setTimeout(() => { button.textContent = "Copy"; }, 1500);
    }
  });
  vscode.postMessage({ type: "ready" });
})();
