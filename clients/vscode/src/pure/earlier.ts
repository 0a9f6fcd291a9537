// The panel's "Earlier turns (N more)" control (pure: no vscode import, so node:test covers
// it): a click fetches the page before the turns shown and puts it above them; a fetch that
// fails leaves the turns as they are and gives the control back with the reason, to be
// clicked again.
import { type PanelModel, prependTurns, type TurnRecord } from "./model";
import type { PanelOp, ViewSync } from "./view";

export interface TurnsPage { turns: TurnRecord[]; start: number }

export class EarlierTurns {
  private fetching: PanelModel | undefined;

  /** The op for the webview after a click (undefined: nothing to send: no earlier turns, a
   * fetch for this conversation already out, or another conversation shown since).
   * `fetchPage(before)`: agentls/turns for the page ending before turn `before`;
   * `shown()`: the conversation the panel shows now. */
  async click(model: PanelModel, sync: ViewSync, fetchPage: (before: number) => Promise<TurnsPage>,
              shown: () => PanelModel): Promise<PanelOp | undefined> {
    if (!model.sessionId || model.earlier <= 0 || this.fetching === model) return undefined;
    this.fetching = model;
    try {
      const page = await fetchPage(model.earlier);
      if (shown() !== model) return undefined; // another conversation is shown now
      return sync.earlier(model, prependTurns(model, page.turns, page.start));
    } catch (error) {
      if (shown() !== model) return undefined;
      const reason = error instanceof Error ? error.message : String(error);
      return { op: "earlier", turns: [], more: model.earlier,
               error: `Could not fetch the earlier turns (${reason}); click the button to try again.` };
    } finally {
      if (this.fetching === model) this.fetching = undefined;
    }
  }
}
