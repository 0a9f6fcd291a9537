// Approvals and the agent's questions (window/showMessageRequest) as a modal: the first line
// is the title, the rest the detail. The refusing action ("Deny") is the modal's close
// affordance, so Escape and the close button mean Deny and VS Code adds no second
// "Cancel" beside it.
import * as vscode from "vscode";
import { type MessageActionItem, MessageType, type ShowMessageRequestParams } from "vscode-languageclient/node";

/** The title an approval's refusing action has (server/agentls/lsp/services/approvals.py). */
export const REFUSE_TITLE = "Deny";

interface Choice extends vscode.MessageItem {
  action: MessageActionItem;
}

export async function showMessageRequest(params: ShowMessageRequestParams):
    Promise<MessageActionItem | null> {
  const [first, ...rest] = params.message.split("\n");
  const choices: Choice[] = (params.actions ?? []).map((action) =>
    ({ title: action.title, action, isCloseAffordance: action.title === REFUSE_TITLE }));
  const options: vscode.MessageOptions = { modal: true, detail: rest.join("\n") };
  const show = params.type === MessageType.Error ? vscode.window.showErrorMessage
    : params.type === MessageType.Warning ? vscode.window.showWarningMessage
      : vscode.window.showInformationMessage;
  const chosen = await show<Choice>(first, options, ...choices);
  return chosen?.action ?? choices.find((c) => c.isCloseAffordance)?.action ?? null;
}
