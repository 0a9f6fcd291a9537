import * as vscode from "vscode";
import { recordTiming } from "./chat";
import { reviewDecorations } from "./editorReview";
import { laidOutRows } from "./pure/floor";

/**
 * Benchmark only (registered when AGENTLS_VSCODE_TIMINGS is set; in no menu or palette, the
 * e2e binds a key to it in its profile): the floor under the review's drawing. A file already
 * laid out as the review shows its edit is opened and given the review's decorations as soon
 * as its editor exists: no edit, no server, no review. The e2e times it as it times the review
 * (from here until the page shows the text, the line colours and the gutter marks).
 */
export function registerReviewFloor(extensionUri: vscode.Uri): vscode.Disposable {
  const { added, removed } = reviewDecorations(extensionUri);
  const command = vscode.commands.registerCommand("agentls.bench.reviewFloor",
    async (args?: { file?: string; addedEndsWith?: string }) => {
      const arrivedAt = Date.now();
      const began = performance.now();
      const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
      const file = args?.file;
      const marker = args?.addedEndsWith;
      if (!folder || !file || !marker) return;
      const editor = await vscode.window.showTextDocument(vscode.Uri.joinPath(folder, file), { preview: false });
      const doc = editor.document;
      const rows = laidOutRows(Array.from({ length: doc.lineCount }, (_, k) => doc.lineAt(k).text),
                               (line) => line.endsWith(marker));
      const lines = (r: [number, number][]) => r.map(([a, b]) => new vscode.Range(a, 0, b - 1, 0));
      editor.setDecorations(added, lines(rows.added));
      editor.setDecorations(removed, lines(rows.removed));
      recordTiming({ figure: "review_floor", arrivedAt, file, lines: doc.lineCount,
                     ranges: rows.added.length + rows.removed.length, openMs: performance.now() - began });
    });
  return vscode.Disposable.from(added, removed, command);
}
