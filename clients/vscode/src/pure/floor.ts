/** Benchmark only: the rows the review colours in a text laid out as the review shows it
 * (each added line right after the line it replaces, shown as removed), found by the added
 * lines themselves; as [start, end) rows, like FileReview.decorations(). */
export function laidOutRows(lines: readonly string[], isAdded: (line: string) => boolean):
  { removed: [number, number][]; added: [number, number][] } {
  const removed: [number, number][] = [];
  const added: [number, number][] = [];
  lines.forEach((line, k) => {
    if (k === 0 || !isAdded(line)) return;
    removed.push([k - 1, k]);
    added.push([k, k + 1]);
  });
  return { removed, added };
}
