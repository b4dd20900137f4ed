// Which published tools /mcp serves (PUT /api/v1/tools/exposure): autoExpose and the explicit list, changed at the
// revision read, so a change made elsewhere meanwhile is refused rather than overwritten.
import { type Envelope, put } from "../../api";
import type { Exposure } from "./types";

export function setExposure(exposure: Exposure, change: { autoExpose?: boolean; listed?: [string, boolean] }): Promise<Envelope> {
  let tools = exposure.tools;
  if (change.listed) {
    const [name, listed] = change.listed;
    tools = listed ? [...tools.filter((tool) => tool !== name), name] : tools.filter((tool) => tool !== name);
  }
  return put("/tools/exposure", {
    autoExpose: change.autoExpose ?? exposure.autoExpose,
    tools,
    expectedRevision: exposure.revision,
  });
}
