// The review of an agent edit. agentls.review chooses what opens first: the review in the
// editor, hunk by hunk (src/editorReview.ts), or the picker, the quick path: a picker listing every file it changes, all ticked, so
// keeping everything is one action (Enter, or the ✓ title button), and any file can be
// unticked first; Enter keeps the ticked files wherever the focus is. "Review in
// the refactor preview" (the title button) opens VS Code's refactor preview of the whole edit
// for change-by-change choices; each file's button opens its diff. The status bar says
// "waiting for your review" until the person decides.
import * as vscode from "vscode";
import type { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, LanguageClient } from "vscode-languageclient/node";
import {
  describe, keptEdit, leftOutReason, reviewFiles, Ticked, type ReviewFile, type WorkspaceEdit,
} from "./pure/review";
import type { EditorReview } from "./editorReview";
import type { StatusItem } from "./status";

type Choice = { kind: "keep"; uris: Set<string> } | { kind: "preview" } | { kind: "editor" } | { kind: "discard" };

const KEEP_BUTTON: vscode.QuickInputButton = {
  iconPath: new vscode.ThemeIcon("check"), tooltip: "Keep the ticked files (Enter)",
};
const PREVIEW_BUTTON: vscode.QuickInputButton = {
  iconPath: new vscode.ThemeIcon("checklist"), tooltip: "Review change by change in the refactor preview",
};
const EDITOR_BUTTON: vscode.QuickInputButton = {
  iconPath: new vscode.ThemeIcon("diff-multiple"), tooltip: "Review hunk by hunk in the editor",
};
const DIFF_BUTTON: vscode.QuickInputButton = {
  iconPath: new vscode.ThemeIcon("diff"), tooltip: "Open this file's change (refactor preview)",
};

function pick(files: ReviewFile[], label: string, folder: string | undefined): Promise<Choice> {
  return new Promise((resolve) => {
    type Item = vscode.QuickPickItem & { uri: string };
    const qp = vscode.window.createQuickPick<Item>();
    qp.title = `${label} — Enter keeps the ticked files`;
    // Short enough to show whole beside the "2 Selected" badge; the buttons' tooltips say the rest.
    qp.placeholder = "Untick a file to leave it out · Esc discards all";
    qp.canSelectMany = true;
    qp.ignoreFocusOut = true;
    qp.matchOnDetail = true;
    qp.keepScrollPosition = true;
    qp.buttons = [KEEP_BUTTON, EDITOR_BUTTON, PREVIEW_BUTTON];
    const ticked = new Ticked(files.map((f) => f.uri));
    const draw = (active?: string) => {
      qp.items = files.map((f) => ({ ...describe(f, folder), uri: f.uri, buttons: [DIFF_BUTTON] }));
      qp.selectedItems = qp.items.filter((i) => ticked.kept.has(i.uri));
      qp.activeItems = qp.items.filter((i) => i.uri === active);
    };
    draw();
    let done = false;
    const finish = (choice: Choice) => {
      if (done) return;
      done = true;
      resolve(choice);
      qp.dispose();
    };
    const keep = () => finish({ kind: "keep", uris: new Set(qp.selectedItems.map((i) => i.uri)) });
    qp.onDidChangeSelection((selected) => {
      // A clicked checkbox keeps the keyboard focus and takes Enter as "tick me again", so
      // Enter would not keep the files: the rows drawn anew let Enter reach the picker.
      if (ticked.update(selected.map((i) => i.uri))) draw(qp.activeItems[0]?.uri);
    });
    qp.onDidAccept(keep);
    qp.onDidTriggerButton((button) => (button === KEEP_BUTTON ? keep()
      : finish({ kind: button === EDITOR_BUTTON ? "editor" : "preview" })));
    qp.onDidTriggerItemButton(() => finish({ kind: "preview" }));
    qp.onDidHide(() => finish({ kind: "discard" }));
    qp.show();
  });
}

async function save(edit: vscode.WorkspaceEdit): Promise<void> {
  if (!vscode.workspace.getConfiguration("agentls").get("saveAcceptedEdits", true)) return;
  for (const [uri] of edit.entries()) {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    if (doc?.isDirty) await doc.save();
  }
}

/** The workspace/applyEdit handler: the person's review, and the truthful answer. */
export async function reviewEdit(lc: LanguageClient, status: StatusItem, inEditor: EditorReview,
                                 params: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult> {
  const lspEdit = params.edit as WorkspaceEdit;
  const files = reviewFiles(lspEdit);
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.toString();
  const confirm = Object.values(lspEdit.changeAnnotations ?? {}).some((a) => a.needsConfirmation);
  const mode = vscode.workspace.getConfiguration("agentls").get<string>("review", "editor");
  status.reviewing(true);
  try {
    const choice: Choice = !confirm || files.length === 0 ? { kind: "keep", uris: new Set(files.map((f) => f.uri)) }
      : mode === "refactorPreview" ? { kind: "preview" } : mode === "editor" ? { kind: "editor" }
        : await pick(files, params.label ?? "AgentLS edit", folder);
    if (choice.kind === "editor") return await inEditor.run(lc, params);
    if (choice.kind === "discard") return { applied: false, failureReason: "discarded in the review" };
    if (choice.kind === "preview") {
      const edit = await lc.protocol2CodeConverter.asWorkspaceEdit(params.edit);
      const applied = await vscode.workspace.applyEdit(edit, { isRefactoring: true });
      if (!applied) {
        return { applied: false, failureReason: "discarded in the refactor preview, or no change was ticked" };
      }
      await save(edit);
      // Unticked changes still answer applied: the server reads what landed from the documents.
      return { applied: true };
    }
    if (choice.uris.size === 0) return { applied: false, failureReason: "discarded in the review" };
    const edit = await lc.protocol2CodeConverter.asWorkspaceEdit(
      keptEdit(lspEdit, choice.uris) as ApplyWorkspaceEditParams["edit"]);
    const applied = await vscode.workspace.applyEdit(edit);
    if (!applied) return { applied: false, failureReason: "VS Code could not apply the edit" };
    await save(edit);
    if (choice.uris.size === files.length) return { applied: true };
    return { applied: false, failureReason: leftOutReason(files, choice.uris, folder) };
  } finally {
    status.reviewing(false);
  }
}
