// Light, dark, or the system's: the person's choice, kept in this browser (a preference, nothing secret). The page
// always carries the theme in force (data-theme), the system's followed as it changes.
import { useEffect, useState } from "preact/hooks";

type Theme = "system" | "light" | "dark";
const KEY = "saip-console-theme";
const NEXT: Record<Theme, Theme> = { system: "light", light: "dark", dark: "system" };
const SYSTEM_DARK = window.matchMedia("(prefers-color-scheme: dark)");

function stored(): Theme {
  const value = window.localStorage.getItem(KEY);
  return value === "light" || value === "dark" ? value : "system";
}

export function applyTheme(theme: Theme = stored()): void {
  const resolved = theme === "system" ? (SYSTEM_DARK.matches ? "dark" : "light") : theme;
  document.documentElement.setAttribute("data-theme", resolved);
}

SYSTEM_DARK.addEventListener("change", () => applyTheme());

export function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(stored);
  useEffect(() => {
    if (theme === "system") window.localStorage.removeItem(KEY);
    else window.localStorage.setItem(KEY, theme);
    applyTheme(theme);
  }, [theme]);
  return (
    <button type="button" onClick={() => setTheme(NEXT[theme])} aria-label={`Theme: ${theme}; switch to ${NEXT[theme]}`}>
      Theme: {theme}
    </button>
  );
}
