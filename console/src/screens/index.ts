// The console's screens: where each lives, its name in the navigation, and its code (loaded when first shown).
import type { FunctionComponent } from "preact";

export interface ScreenProps {
  params: Record<string, string>;
}

export interface Screen {
  path: string;
  title: string;
  /** Shown in the navigation (a detail route, such as one trace, is not). */
  nav: boolean;
  load: () => Promise<{ default: FunctionComponent<ScreenProps> }>;
}

export const SCREENS: Screen[] = [
  { path: "/", title: "Overview", nav: true, load: () => import("./Overview") },
  { path: "/approvals", title: "Approvals", nav: true, load: () => import("./Approvals") },
  { path: "/safety", title: "Safety", nav: true, load: () => import("./Safety") },
  { path: "/tools", title: "Tool Studio", nav: true, load: () => import("./ToolStudio") },
  { path: "/servers", title: "MCP servers", nav: true, load: () => import("./Servers") },
  { path: "/knowledge", title: "Knowledge", nav: true, load: () => import("./Knowledge") },
  { path: "/shipyard", title: "Shipyard", nav: true, load: () => import("./Shipyard") },
  { path: "/traces", title: "Traces", nav: true, load: () => import("./Traces") },
  { path: "/chat", title: "Chat", nav: true, load: () => import("./Chat") },
  { path: "/clients", title: "Clients", nav: true, load: () => import("./Clients") },
  { path: "/consent", title: "Connect a client", nav: false, load: () => import("./Consent") },
  { path: "/traces/:id", title: "Trace", nav: false, load: () => import("./Trace") },
];
