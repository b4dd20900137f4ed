import { render } from "preact";
import { App } from "./app";
import { applyTheme } from "./theme";
import "./styles.css";

applyTheme();
const root = document.getElementById("app");
if (root) render(<App />, root);
