// The console's build: one page served by the gateway under /console, its hashed files under /console/assets,
// written into the gateway's package (saip/gateway/console/static) where the gateway finds them.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/console/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "../services/gateway/src/saip/gateway/console/static",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: true,
    // Tool Studio's code editor (CodeMirror 6) is one chunk of about 400 kB (135 kB gzipped), loaded with the editor.
    chunkSizeWarningLimit: 420,
  },
});
