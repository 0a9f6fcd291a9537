// Bundles the extension into dist/extension.js, and the unit tests (with the pure modules they
// import) into out/test/*.js for node's test runner.
import * as esbuild from "esbuild";
import * as fs from "node:fs";

const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");

const extension = {
  entryPoints: ["src/extension.ts"], bundle: true, outfile: "dist/extension.js",
  format: "cjs", platform: "node", target: "node18", external: ["vscode"],
  minify: production, sourcemap: !production, logLevel: "warning",
};
const tests = {
  entryPoints: fs.readdirSync("test").filter((f) => f.endsWith(".test.ts")).map((f) => `test/${f}`),
  bundle: true, outdir: "out/test", format: "cjs", platform: "node", target: "node18",
  external: ["vscode"], logLevel: "warning",
};

if (watch) {
  await (await esbuild.context(extension)).watch();
} else {
  await esbuild.build(extension);
  if (!production) await esbuild.build(tests);
}
