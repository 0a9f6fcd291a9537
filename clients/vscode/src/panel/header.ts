// The header: the chat's model (a button that asks the extension for the model picker) and
// its mode (a select).
import { el, page, vscode } from "./dom";

export interface Options {
  model: string;
  backend: string;
  mode: string;
  modes: { name: string; label: string; description: string }[];
}

const { header, modelButton, modeSelect } = page;

export function showOptions(options: Options | null): void {
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

export function setupHeader(): void {
  modelButton.addEventListener("click", () => vscode.postMessage({ type: "chooseModel" }));
  modeSelect.addEventListener("change", () => vscode.postMessage({ type: "setMode", mode: modeSelect.value }));
}
