// Bundles the extension into dist/extension.js, the chat panel's webview script (src/panel/)
// into dist/panel.js, and the unit tests (with the pure modules they import) into
// out/test/*.js for node's test runner.
import * as esbuild from "esbuild";
import * as fs from "node:fs";

const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");

const extension = {
  entryPoints: ["src/extension.ts"], bundle: true, outfile: "dist/extension.js",
  format: "cjs", platform: "node", target: "node18", external: ["vscode"],
  minify: production, sourcemap: !production, logLevel: "warning",
};
// The webview is a browser page: one script, no require, loaded with the page's nonce.
const panel = {
  entryPoints: ["src/panel/main.ts"], bundle: true, outfile: "dist/panel.js",
  format: "iife", platform: "browser", target: "chrome114",
  minify: production, sourcemap: !production, logLevel: "warning",
};
const tests = {
  entryPoints: fs.readdirSync("test").filter((f) => f.endsWith(".test.ts")).map((f) => `test/${f}`),
  bundle: true, outdir: "out/test", format: "cjs", platform: "node", target: "node18",
  external: ["vscode"], logLevel: "warning",
};

if (watch) {
  await (await esbuild.context(extension)).watch();
  await (await esbuild.context(panel)).watch();
} else {
  await esbuild.build(extension);
  await esbuild.build(panel);
  if (!production) await esbuild.build(tests);
}
