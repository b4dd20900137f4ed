// Where the console is: its path under /console/, kept in the browser's history so back, forward and a reload work.
import { useEffect, useState } from "preact/hooks";

export const BASE = "/console";
const listeners = new Set<() => void>();

/** The path inside the console ("/", "/tools/word-count") and its query. */
export function location(): { path: string; query: URLSearchParams } {
  const path = window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) : "/";
  return { path: path === "" ? "/" : path, query: new URLSearchParams(window.location.search) };
}

export function href(path: string): string {
  return BASE + path;
}

export function navigate(path: string, options: { replace?: boolean } = {}): void {
  const target = href(path);
  if (options.replace) window.history.replaceState(null, "", target);
  else window.history.pushState(null, "", target);
  for (const listener of listeners) listener();
  window.scrollTo(0, 0);
}

window.addEventListener("popstate", () => {
  for (const listener of listeners) listener();
});

export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setTick] = useState(0);
  useEffect(() => {
    const listener = () => setTick((tick) => tick + 1);
    listeners.add(listener);
    return () => listeners.delete(listener);
  }, []);
  return location();
}

/** The named parts of `path` when it fits `pattern` ("/tools/:name"); null otherwise. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const wanted = pattern.split("/");
  const given = path.split("/");
  if (wanted.length !== given.length) return null;
  const found: Record<string, string> = {};
  for (let index = 0; index < wanted.length; index += 1) {
    const want = wanted[index] ?? "";
    const part = given[index] ?? "";
    if (want.startsWith(":")) {
      if (part === "") return null;
      found[want.slice(1)] = decodeURIComponent(part);
    } else if (want !== part) {
      return null;
    }
  }
  return found;
}
