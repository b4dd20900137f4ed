// Tool Studio: the tools (drafts, published, bundled) with their risk and exposure, and the editor of one of them
// (`?open=<name>`), of a new draft (`?new=`), or of a copy of another tool (`?new=<name>`).
import { useLocation } from "../router";
import { Editor } from "./studio/Editor";
import { ToolList } from "./studio/ToolList";
import "./studio/studio.css";

export default function ToolStudio() {
  const { query } = useLocation();
  const open = query.get("open");
  const copy = query.get("new");
  return (
    <>
      <div class="page-head">
        <h1>Tool Studio</h1>
      </div>
      <p class="hint">
        Tools written in JavaScript, run in a sandbox of their own: write one, pass its Local Pass, publish it, and /mcp serves it. The
        same methods as <code>saip tools</code> and the AI's saip_tools_* tools.
      </p>
      {open || copy !== null ? <Editor open={open || null} copy={copy || null} /> : <ToolList />}
    </>
  );
}
