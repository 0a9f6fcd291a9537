// The prompt box: Enter sends (Shift+Enter is a new line), with the mentions picked as
// references; Cancel; and the empty state's buttons (Set API key, Choose backend).
import { page, vscode } from "./dom";
import { closeMentions, mentionKey, takeReferences } from "./mentions";

const { form, input, cancel, empty } = page;

export function setupInput(): void {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const prompt = input.value.trim();
    if (!prompt) return;
    // The mentions picked from the list and still in the text go with it, as the server's
    // references (it resolves them); the text is sent as typed.
    const references = takeReferences(prompt);
    closeMentions();
    vscode.postMessage({ type: "send", prompt, references });
    input.value = "";
  });
  input.addEventListener("keydown", (event) => {
    if (mentionKey(event)) return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  cancel.addEventListener("click", () => vscode.postMessage({ type: "cancel" }));
  empty.addEventListener("click", (event) => {
    const target = event.target as HTMLElement;
    const command = target.closest("button")?.dataset.command;
    if (command) vscode.postMessage({ type: "command", command });
  });
}
