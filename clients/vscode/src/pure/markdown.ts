// Model text is untrusted: it is rendered with raw HTML disabled (escaped), links limited to
// http(s)/mailto, images shown as their alt text (the panel loads nothing remote), and code
// blocks wrapped with a Copy button. The webview's CSP is the second wall.
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false });
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false }); // "calc.py" is a file, not a site

const SAFE_LINK = /^(https?:|mailto:)/i;
md.validateLink = (url: string): boolean => SAFE_LINK.test(url.trim());

md.renderer.rules.image = (tokens, idx) => {
  const token = tokens[idx];
  const alt = token.children ? token.children.map((t) => t.content).join("") : token.content;
  return `<span class="img-alt">[image: ${md.utils.escapeHtml(alt)}]</span>`;
};

md.renderer.rules.fence = (tokens, idx) => {
  const token = tokens[idx];
  const lang = token.info.trim().split(/\s+/)[0] ?? "";
  const langLabel = lang ? `<span class="lang">${md.utils.escapeHtml(lang)}</span>` : "";
  return `<div class="code">${langLabel}<button class="copy" type="button" title="Copy">Copy</button>` +
    `<pre><code>${md.utils.escapeHtml(token.content)}</code></pre></div>\n`;
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
