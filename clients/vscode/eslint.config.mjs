import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "out/", "node_modules/", "media/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts", "**/*.mjs"],
    languageOptions: { globals: { process: "readonly", console: "readonly", setTimeout: "readonly",
      clearTimeout: "readonly", performance: "readonly", Buffer: "readonly" } },
    rules: { "@typescript-eslint/no-non-null-assertion": "off", eqeqeq: "error" },
  },
);
