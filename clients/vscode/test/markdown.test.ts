import assert from "node:assert/strict";
import { test } from "node:test";
import { renderMarkdown } from "../src/pure/markdown";

const HOSTILE = [
  "<script>alert(1)</script>",
  "<img src=x onerror=alert(1)>",
  '<a href="javascript:alert(1)">x</a>',
  "[click](javascript:alert(1))",
  "[click](JAVASCRIPT:alert(1))",
  "[data](data:text/html;base64,PHNjcmlwdD4=)",
  "![pixel](https://tracker.example/p.gif)",
  "<iframe src=https://evil.example></iframe>",
  '<div style="position:fixed">overlay</div>',
  "```html\n<script>alert(2)</script>\n```",
  "`<b>inline</b>`",
  "<svg onload=alert(1)>",
];

test("model text cannot produce HTML elements, handlers or dangerous links", () => {
  for (const input of HOSTILE) {
    const html = renderMarkdown(input);
    assert.doesNotMatch(html, /<(script|img|iframe|svg|div style|b>)/i, `${input} -> ${html}`);
    assert.doesNotMatch(html, /href="(javascript|data):/i, `${input} -> ${html}`);
    assert.doesNotMatch(html, /<[^>]+\son\w+=/i, `${input} -> ${html}`);
  }
});

test("raw HTML is shown as text, not dropped", () => {
  assert.match(renderMarkdown("<script>alert(1)</script>"), /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
});

test("images are shown as their alt text and load nothing", () => {
  const html = renderMarkdown("![a chart](https://tracker.example/p.gif)");
  assert.match(html, /\[image: a chart\]/);
  assert.doesNotMatch(html, /tracker\.example/);
});

test("code blocks: highlighted, escaped, with Copy / Insert / Apply in a bar above the code", () => {
  const html = renderMarkdown("```python\nprint('<hi>')\n```");
  const head = html.slice(0, html.indexOf("<pre>"));
  for (const action of ["copy", "insert", "apply"]) {
    assert.match(head, new RegExp(`<button class="code-action" data-action="${action}"`));
  }
  assert.match(head, /<span class="lang">python<\/span>/);
  assert.match(html, /<span class="hljs-built_in">print<\/span>/);
  assert.match(html, /&lt;hi&gt;/);
  assert.doesNotMatch(html, /<hi>/);
  assert.doesNotMatch(html, /style=/); // colours come from the panel's stylesheet (CSP)
});

test("an unknown language is shown as escaped text, labelled as it was given", () => {
  const html = renderMarkdown("```nosuchlang\n<b>x</b>\n```");
  assert.match(html, /<span class="lang">nosuchlang<\/span>/);
  assert.match(html, /<code>&lt;b&gt;x&lt;\/b&gt;\n<\/code>/);
});

test("a hostile fence language cannot break out of its label", () => {
  const html = renderMarkdown('```"><script>x</script>\ncode\n```');
  assert.doesNotMatch(html, /<script>/);
});

test("ordinary markdown still renders: emphasis, lists, http links", () => {
  const html = renderMarkdown("**bold** and *it*\n\n- one\n- two\n\n[docs](https://example.com/a)");
  assert.match(html, /<strong>bold<\/strong>/);
  assert.match(html, /<li>one<\/li>/);
  assert.match(html, /<a href="https:\/\/example.com\/a" title="https:\/\/example.com\/a">docs<\/a>/);
});

test("file names are not turned into web links", () => {
  assert.doesNotMatch(renderMarkdown("Fixed add() in calc.py and README.md."), /<a /);
  assert.match(renderMarkdown("see https://example.com"), /<a href="https:\/\/example.com"/);
});
