// Model text is untrusted: it is rendered with raw HTML disabled (escaped), links limited to
// http(s)/mailto, images shown as their alt text (the panel loads nothing remote), and code
// blocks highlighted here, in the extension (highlight.js escapes the code and emits only
// <span class="hljs-…">), so the webview needs no script or style beyond its own (CSP).
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import csharp from "highlight.js/lib/languages/csharp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import dockerfile from "highlight.js/lib/languages/dockerfile";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import lua from "highlight.js/lib/languages/lua";
import makefile from "highlight.js/lib/languages/makefile";
import markdown from "highlight.js/lib/languages/markdown";
import php from "highlight.js/lib/languages/php";
import python from "highlight.js/lib/languages/python";
import ruby from "highlight.js/lib/languages/ruby";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import MarkdownIt from "markdown-it";

const LANGUAGES = {
  bash, c, cpp, csharp, css, diff, dockerfile, go, ini, java, javascript, json, lua, makefile,
  markdown, php, python, ruby, rust, shell, sql, typescript, xml, yaml,
};
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);
hljs.registerAliases(["toml"], { languageName: "ini" });

const md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false });
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false }); // "calc.py" is a file, not a site

const SAFE_LINK = /^(https?:|mailto:)/i;
md.validateLink = (url: string): boolean => SAFE_LINK.test(url.trim());

md.renderer.rules.image = (tokens, idx) => {
  const token = tokens[idx];
  const alt = token.children ? token.children.map((t) => t.content).join("") : token.content;
  return `<span class="img-alt">[image: ${md.utils.escapeHtml(alt)}]</span>`;
};

/** The language a fence's info string names ("python", "py title=x"), or "". */
export function fenceLanguage(info: string): string {
  return info.trim().split(/\s+/)[0] ?? "";
}

/** The code as highlighted HTML when highlight.js knows the language, else escaped text. */
export function highlightCode(code: string, lang: string): string {
  if (lang && hljs.getLanguage(lang)) {
    try {
      return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
    } catch {
      // a grammar that throws on odd input: the plain text is still right
    }
  }
  return md.utils.escapeHtml(code);
}

/** The bar above a code block: its language and its actions (never over the code). */
export function codeHead(lang: string, streaming = false): string {
  const label = `<span class="lang">${md.utils.escapeHtml(lang || "text")}</span>`;
  const disabled = streaming ? " disabled" : "";
  return `<div class="code-head">${label}<span class="code-actions">` +
    `<button class="code-action" data-action="copy" type="button" title="Copy the code"${disabled}>Copy</button>` +
    `<button class="code-action" data-action="insert" type="button" title="Insert the code at the cursor in the editor"${disabled}>Insert</button>` +
    `<button class="code-action" data-action="apply" type="button" title="Apply the code to the editor's selection, reviewed in the refactor preview"${disabled}>Apply</button>` +
    `</span></div>`;
}

md.renderer.rules.fence = (tokens, idx) => {
  const token = tokens[idx];
  const lang = fenceLanguage(token.info);
  const cls = lang && hljs.getLanguage(lang) ? ` class="hljs language-${md.utils.escapeHtml(lang)}"` : "";
  return `<div class="code">${codeHead(lang)}<pre><code${cls}>${highlightCode(token.content, lang)}` +
    `</code></pre></div>\n`;
};

const defaultLinkOpen = md.renderer.rules.link_open ??
  ((tokens, idx, options, _env, self) => self.renderToken(tokens, idx, options));
md.renderer.rules.link_open = (tokens, idx, options, env, self) => {
  tokens[idx].attrSet("title", tokens[idx].attrGet("href") ?? "");
  return defaultLinkOpen(tokens, idx, options, env, self);
};

export function renderMarkdown(text: string): string {
  return md.render(text);
}
