// The console builds into the directory the console Go package embeds.
// Preact's JSX runtime through esbuild: no framework plugin is needed.
import { defineConfig } from 'vite';

export default defineConfig({
  root: '.',
  base: '/',
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: '../console/assets/app',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2022',
  },
});
