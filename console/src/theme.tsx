// Light, dark, or the system's: the person's choice, kept in this browser (a preference, nothing secret).
import { useEffect, useState } from "preact/hooks";

type Theme = "system" | "light" | "dark";
const KEY = "saip-console-theme";
const NEXT: Record<Theme, Theme> = { system: "light", light: "dark", dark: "system" };

function stored(): Theme {
  const value = window.localStorage.getItem(KEY);
  return value === "light" || value === "dark" ? value : "system";
}

export function applyTheme(theme: Theme = stored()): void {
  if (theme === "system") document.documentElement.removeAttribute("data-theme");
  else document.documentElement.setAttribute("data-theme", theme);
}

export function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(stored);
  useEffect(() => {
    applyTheme(theme);
    if (theme === "system") window.localStorage.removeItem(KEY);
    else window.localStorage.setItem(KEY, theme);
  }, [theme]);
  return (
    <button type="button" onClick={() => setTheme(NEXT[theme])} aria-label={`Theme: ${theme}; switch to ${NEXT[theme]}`}>
      Theme: {theme}
    </button>
  );
}
