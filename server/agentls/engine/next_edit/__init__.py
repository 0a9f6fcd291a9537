"""Next-edit suggestions (DESIGN.md decisions 15 and 18): the edit the person is about to make,
anywhere near the cursor, predicted from what they just changed.

A fast path beside inline completion, never the agent loop: ``history`` keeps each
document's recent edits as diffs (from ``didChange``, bounded), ``region`` cuts the editable
region and its context around the cursor, ``prompts`` writes them in Zeta's editable-region
format or as a chat prompt and reads the model's rewrite back, ``predictor`` asks the model
(one request in flight per document, cancel-first) and turns the rewrite into one checked
edit. The LSP side is ``lsp/features/next_edit/``.
"""
