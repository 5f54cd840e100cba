// eslint 9 flat config: typescript-eslint's recommended, type-checked rules on src/ and test/.
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["out/**", "dist/**", "node_modules/**", ".e2e/**", "eslint.config.mjs"] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      eqeqeq: ["error", "always"],
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  // node:test's describe/it return promises that the runner itself awaits.
  { files: ["test/**/*.ts"], rules: { "@typescript-eslint/no-floating-promises": "off" } },
);
