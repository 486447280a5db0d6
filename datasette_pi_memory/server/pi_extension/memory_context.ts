/**
 * memory_context: one Pi tool that searches and reads this machine's Pi session
 * history through the datasette-pi-memory JSON API (`pimem serve`).
 *
 * Installed by `pimem pi install` as <agent folder>/extensions/memory_context.ts.
 * It reads <agent folder>/pi-memory/pi-tool.json ({"url", "token", "pimem", "serve_args"}) on
 * every call, so re-running `pimem pi install` takes effect without restarting Pi. When the
 * server cannot be reached, the call starts it (`pimem serve --background`, with the pimem that
 * `pimem pi install` recorded; only for a loopback URL), waits for it (bounded) and tries once more.
 *
 * The token is sent only to a server that first proves it holds the pi-memory secret: the tool
 * sends a fresh challenge and the token's payload (never its signature) to /-/pi-memory/api/identity
 * and checks the answer against HMAC-SHA256(signature, challenge). Anything else on the port gets
 * no token, no query and no journal, and nothing it says reaches the model. The settings file is
 * read only when it is a regular file of this user that nobody else may write.
 *
 * Deliberately registers no event handler: nothing is injected into prompts or
 * context; the model sees history only when it calls the tool.
 */
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { StringEnum } from "@mariozechner/pi-ai";
import { Type, type Static } from "typebox";
import { execFile } from "node:child_process";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { basename, isAbsolute, join } from "node:path";

export const TOOL_NAME = "memory_context";

// Rides every request to the model: keep it under 200 characters (a test holds it there).
export const DESCRIPTION =
	"Search and read past Pi sessions (this project by default): search finds entries, read returns an entry's full text by entryId (around: its neighbours), summaries lists summaries.";

const KINDS = ["user", "assistant", "tool_result", "bash", "custom", "compaction", "branch_summary"] as const;
const SEARCH_LIMIT = 10;
// Each hit's excerpt, in characters (the API's default is 300): ten hits stay under ~1,800 characters.
const EXCERPT_CHARS = 90;
// A call's result line or a result's call, and a session title, as the tool shows them.
const LINE_CHARS = 70;
const TITLE_CHARS = 50;
const TIMEOUT_MS = 60_000;
const START_TIMEOUT_MS = 20_000; // pimem serve --background returns once the server answers

const Parameters = Type.Object({
	action: StringEnum(["search", "read", "summaries"] as const, { description: "search | read | summaries" }),
	query: Type.Optional(Type.String({ description: "Search terms, at most 64 distinct words; omit for the most recent entries" })),
	entryId: Type.Optional(Type.String({ description: "Entry id from a search result (read)" })),
	sessionId: Type.Optional(Type.String({ description: "Session id: limits the search, or picks the entry when an id is ambiguous" })),
	since: Type.Optional(Type.String({ description: "Only entries at or after this date, e.g. 2026-03-01" })),
	until: Type.Optional(Type.String({ description: "Only entries before this date, e.g. 2026-03-31" })),
	// No "global": where the project is a boundary, the agent must not hold the widening.
	scope: Type.Optional(StringEnum(["session", "project"] as const, { description: "Default project" })),
	kind: Type.Optional(
		Type.Union([Type.String(), Type.Array(Type.String())], { description: `Entry kind(s): ${KINDS.join(", ")}` }),
	),
	offset: Type.Optional(
		Type.Integer({ minimum: 0, description: "Continue from a reply's next_offset (read: characters; search, summaries: hits)" }),
	),
	like: Type.Optional(Type.String({ description: "search: only entries of the same text as this entry id (a hit's more like it)" })),
	around: Type.Optional(
		Type.Integer({ minimum: 0, maximum: 20, description: "read: also the N entries before and after it (the question, the result)" }),
	),
});

export type MemoryContextParams = Static<typeof Parameters>;

interface ToolConfig {
	url: string;
	token: string;
	pimem?: string; // absolute path of the pimem that installed the tool
	serveArgs?: string[]; // serve --background --port N ... : starts the server
}

/** `$PI_CODING_AGENT_DIR` with ~ expanded, else ~/.pi/agent: the rule Pi and pimem share. */
export function agentDir(): string {
	const value = process.env.PI_CODING_AGENT_DIR;
	if (value) {
		if (value === "~") return homedir();
		if (value.startsWith("~/")) return join(homedir(), value.slice(2));
		return value;
	}
	return join(homedir(), ".pi", "agent");
}

export function configPath(): string {
	return join(agentDir(), "pi-memory", "pi-tool.json");
}

/** The settings file's text, read only when it is a regular file (not a link) of this user that nobody else may write. */
function readSettings(path: string): string {
	let fd: number;
	try {
		fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
	} catch (err) {
		if ((err as { code?: string }).code === "ELOOP") {
			throw new Error(`memory_context refuses ${path}: it is a symbolic link, and the tool reads only its own file. Fix: remove it and run: pimem pi install`);
		}
		throw new Error(`memory_context is not set up: ${path} is missing. Fix: run: pimem pi install`);
	}
	try {
		const st = fstatSync(fd);
		if (!st.isFile()) throw new Error(`memory_context refuses ${path}: it is not a regular file. Fix: remove it and run: pimem pi install`);
		if (typeof process.getuid === "function" && st.uid !== process.getuid()) {
			throw new Error(`memory_context refuses ${path}: it belongs to another user (uid ${st.uid}). Fix: remove it and run: pimem pi install`);
		}
		if (st.mode & 0o022) {
			throw new Error(
				`memory_context refuses ${path}: others may write it (mode ${(st.mode & 0o777).toString(8)}), so it could point the tool anywhere. Fix: run: pimem pi install (it writes it 0600)`,
			);
		}
		return readFileSync(fd, "utf8");
	} finally {
		closeSync(fd);
	}
}

function loadConfig(): ToolConfig {
	const path = configPath();
	const raw = readSettings(path);
	let parsed: unknown;
	try {
		parsed = JSON.parse(raw);
	} catch {
		throw new Error(`memory_context config ${path} is not valid JSON. Fix: run: pimem pi install`);
	}
	const cfg = parsed as Partial<ToolConfig>;
	if (!cfg || typeof cfg.url !== "string" || !cfg.url || typeof cfg.token !== "string" || !cfg.token) {
		throw new Error(`memory_context config ${path} lacks "url" or "token". Fix: run: pimem pi install`);
	}
	const rawArgs = (parsed as Json).serve_args;
	const serveArgs = Array.isArray(rawArgs) && rawArgs.every((a) => typeof a === "string") ? rawArgs : undefined;
	const pimem = typeof (parsed as Json).pimem === "string" && (parsed as Json).pimem ? (parsed as Json).pimem : undefined;
	return { url: cfg.url.replace(/\/+$/, ""), token: cfg.token, pimem, serveArgs };
}

/** Build the API query string from the tool's parameters and where Pi runs now. */
export function buildQuery(params: MemoryContextParams, cwd: string, journal: string | undefined): URLSearchParams {
	const q = new URLSearchParams();
	const put = (key: string, value: string | number | undefined) => {
		if (value === undefined || value === null || value === "") return;
		q.append(key, String(value));
	};
	put("q", params.query?.trim());
	put("scope", params.scope);
	put("cwd", cwd);
	put("session_id", params.sessionId?.trim());
	put("id", params.entryId?.trim());
	put("since", params.since?.trim());
	put("until", params.until?.trim());
	const kinds = params.kind === undefined ? [] : Array.isArray(params.kind) ? params.kind : params.kind.split(",");
	for (const k of kinds) put("kind", k.trim());
	put("offset", params.offset);
	put("like", params.like?.trim());
	if (params.action === "read") put("around", params.around);
	else {
		put("limit", SEARCH_LIMIT);
		put("excerpt", EXCERPT_CHARS);
	}
	put("journal", journal);
	return q;
}

// ---- formatting: compact text a model can act on -------------------------------------------

type Json = Record<string, any>;

function time(ts: unknown): string {
	if (typeof ts !== "string" || !ts) return "?";
	return ts.replace(/\.\d+(?=Z|[+-]\d\d:?\d\d$)/, "");
}

function kindLabel(e: Json): string {
	const kind = typeof e.kind === "string" ? e.kind : "?";
	return e.tool ? `${kind}(${e.tool})` : kind;
}

function oneLine(text: unknown): string {
	return typeof text === "string" ? text.replace(/\s+/g, " ").trim() : "";
}

/** What the reply's `sessions` map says of an entry's session (short id, cwd, title, ...). */
function sessionOf(data: Json, e: Json): Json {
	const map: Json = data.sessions && typeof data.sessions === "object" ? data.sessions : {};
	return (typeof e.session_id === "string" && map[e.session_id]) || {};
}

/** What a hit says beyond its kind: a call's outcome and first line of result, a result's call. */
function exchange(e: Json): string {
	if (typeof e.call === "string" && e.call) return ` ← ${cut(oneLine(e.call), LINE_CHARS)}`;
	if (typeof e.outcome !== "string" || !e.outcome) return "";
	const result = cut(oneLine(e.result), LINE_CHARS);
	return ` ${e.outcome}${result ? `: ${result}` : ""}`;
}

function cut(text: string, n: number): string {
	return text.length <= n ? text : `${text.slice(0, n - 1).trimEnd()}…`;
}

function day(ts: unknown): string {
	return typeof ts === "string" ? ts.slice(0, 10) : "?";
}

/** A session's folder as the reply's project root sees it: `.` for the root, a relative path below it. */
function folder(cwd: unknown, root: unknown): string {
	if (typeof cwd !== "string" || !cwd) return "?";
	if (typeof root === "string" && root) {
		if (cwd === root) return ".";
		if (cwd.startsWith(root.endsWith("/") ? root : `${root}/`)) return cwd.slice(root.replace(/\/+$/, "").length + 1);
	}
	return cwd;
}

/** One line per session: its short id, title, folder and start day. */
function sessionHeader(data: Json, sessionId: string): string {
	const s: Json = (data.sessions && data.sessions[sessionId]) || {};
	const short = typeof s.short_id === "string" && s.short_id ? s.short_id : sessionId;
	const title = cut(oneLine(s.title), TITLE_CHARS) || "(untitled)";
	return `[${short}] ${title} · ${folder(s.cwd, data.root)} · ${day(s.started ?? undefined)}`;
}

export function formatHits(data: Json): string {
	const results: Json[] = Array.isArray(data.results) ? data.results : [];
	const action = data.action === "summaries" ? "summaries" : "search";
	const head: string[] = [];
	head.push(`${action}: ${results.length} hit${results.length === 1 ? "" : "s"}`);
	if (data.scope) head.push(`${data.scope}${data.root ? ` ${data.root}` : ""}`);
	if (data.match && data.match !== "all") head.push(`match ${data.match}`);
	const lines = [head.join(" · ")];
	if (data.hint) lines.push(`hint: ${data.hint}`);
	if (data.indexing && data.indexing.complete === false) {
		const ix = data.indexing;
		const count =
			typeof ix.journals_indexed === "number" && typeof ix.journals_total === "number"
				? ` (${ix.journals_indexed}/${ix.journals_total} journals indexed)`
				: "";
		lines.push(`note: ${ix.note || "indexing is still running; results may be incomplete"}${count}`);
	}
	// hits grouped by session, sessions in the order of their best hit
	const groups = new Map<string, Json[]>();
	for (const hit of results) {
		const key = typeof hit.session_id === "string" ? hit.session_id : "?";
		if (!groups.has(key)) groups.set(key, []);
		groups.get(key)!.push(hit);
	}
	for (const [sessionId, hits] of groups) {
		lines.push(sessionHeader(data, sessionId));
		const started = day((data.sessions?.[sessionId] ?? {}).started);
		for (const hit of hits) {
			const ts = time(hit.timestamp);
			const when = day(hit.timestamp) === started ? ts.slice(11, 16) : ts.slice(5, 16).replace("T", " ");
			lines.push(`  ${hit.id} ${when} ${kindLabel(hit)}${exchange(hit)}`);
			const excerpt = oneLine(hit.excerpt ?? hit.summary);
			if (excerpt) lines.push(`    ${excerpt}`);
			const more: string[] = [];
			if (typeof hit.folded === "number" && hit.folded > 0) more.push(`${hit.folded} more like it in this session`);
			const like: Json = hit.like && typeof hit.like === "object" ? hit.like : {};
			if (typeof like.entries === "number" && like.entries > 0) {
				const n = typeof like.sessions === "number" ? like.sessions : 1;
				more.push(`${like.entries} more in ${n} other session${n === 1 ? "" : "s"}: like ${hit.id}`);
			}
			if (more.length) lines.push(`    (and ${more.join("; ")})`);
		}
	}
	if (data.phrases && data.phrases.note) lines.push(`note: ${data.phrases.note}`);
	if (typeof data.next_offset === "number") lines.push(`More: the same ${action} with offset ${data.next_offset}.`);
	if (results.length > 0) {
		lines.push(`Read: entryId (sessionId: the [id]), around N.`);
	} else {
		lines.push(`No hits${data.scope ? ` in scope ${data.scope}` : ""}; try other or fewer terms.`);
	}
	return lines.join("\n");
}

export function formatRead(data: Json, params: MemoryContextParams): string {
	const id = params.entryId ?? "?";
	switch (data.status) {
		case "ok": {
			const e: Json = data.entry ?? {};
			const text = typeof data.text === "string" ? data.text : "";
			const offset = typeof data.offset === "number" ? data.offset : 0;
			const total = typeof data.total_chars === "number" ? data.total_chars : offset + text.length;
			const around: Json[] = Array.isArray(data.around) ? data.around : [];
			const block = (a: Json) => [`--- ${a.id} ${time(a.timestamp)} ${kindLabel(a)}${exchange(a)}`, String(a.text ?? "")];
			const lines = [
				`entry ${e.id ?? id} | ${time(e.timestamp)} | ${kindLabel(e)}${exchange(e)} | session ${e.session_id} | cwd ${sessionOf(data, e).cwd ?? "?"}`,
				`chars ${offset}-${offset + text.length} of ${total}`,
			];
			for (const a of around.filter((a) => a.side === "before")) lines.push(...block(a));
			if (around.length) lines.push(`--- ${e.id ?? id} (this entry)`);
			else lines.push("");
			lines.push(text);
			for (const a of around.filter((a) => a.side !== "before")) lines.push(...block(a));
			if (typeof data.next_offset === "number") {
				lines.push("", `next_offset: ${data.next_offset} (more remains: read again with offset ${data.next_offset})`);
			}
			return lines.join("\n");
		}
		case "ambiguous": {
			const cands: Json[] = Array.isArray(data.candidates) ? data.candidates : [];
			const lines = [`entry id ${id} is ambiguous: ${cands.length} sessions have it. Read again with sessionId set to one of:`];
			for (const c of cands) {
				lines.push(`- session ${c.session_id} | ${time(c.timestamp)} | ${c.kind ?? "?"} | cwd ${c.cwd ?? "?"}`);
			}
			return lines.join("\n");
		}
		case "unavailable":
			return `entry ${id} is unavailable: ${data.reason || "its journal changed or is gone"}. Search again for a current id.`;
		case "not_found":
			return `entry ${id} was not found${params.sessionId ? ` in session ${params.sessionId}` : ""} in this scope. Use an id from a search result, or pass sessionId/scope.`;
		default:
			return `unexpected read response: ${JSON.stringify(data).slice(0, 500)}`;
	}
}

// ---- HTTP ----------------------------------------------------------------------------------

function describeCause(err: unknown): string {
	const e = err as { cause?: { code?: string; message?: string }; message?: string; name?: string };
	return e?.cause?.code || e?.cause?.message || e?.message || String(err);
}

/** The server could not be reached at all (refused, no route): starting it may help. */
class Unreachable extends Error {}

async function request(cfg: ToolConfig, url: string, signal: AbortSignal | undefined, withToken = true): Promise<Response> {
	const timeout = AbortSignal.timeout(TIMEOUT_MS);
	const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
	try {
		return await fetch(url, {
			headers: { ...(withToken ? { Authorization: `Bearer ${cfg.token}` } : {}), Accept: "application/json" },
			redirect: "error", // the token never follows a redirect elsewhere
			signal: combined,
		});
	} catch (err) {
		if (signal?.aborted) throw new Error("memory_context: cancelled");
		if (timeout.aborted) {
			throw new Error(`memory_context: the pi-memory server at ${cfg.url} did not answer within ${TIMEOUT_MS / 1000}s. Fix: check it, or restart it (run: pimem serve stop, then pimem serve --background)`);
		}
		throw new Unreachable(`memory_context: cannot reach the pi-memory server at ${cfg.url} (${describeCause(err)})`);
	}
}

const SERVE_OPTIONS = new Set(["--host", "--port", "--db", "--sessions-dir"]);

/** The port of an http URL on this machine's loopback, undefined for any other URL. */
export function loopbackPort(url: string): string | undefined {
	let parsed: URL;
	try {
		parsed = new URL(url);
	} catch {
		return undefined;
	}
	if (parsed.protocol !== "http:" || !["127.0.0.1", "[::1]", "localhost"].includes(parsed.hostname)) return undefined;
	return parsed.port || "80";
}

/** Why the recorded start command is not this project's `pimem serve --background` for the URL's port; undefined if it is. */
export function startRefusal(url: string, pimem: string | undefined, serveArgs: string[] | undefined): string | undefined {
	const port = loopbackPort(url);
	if (port === undefined) return `the tool starts a server only for a loopback http URL, not ${url}`;
	if (!pimem || !serveArgs) return "pi-tool.json records no pimem to start it with";
	if (!isAbsolute(pimem)) return `pi-tool.json's pimem must be an absolute path, not ${JSON.stringify(pimem)}`;
	let args = serveArgs;
	const name = basename(pimem);
	if (/^python[0-9.]*$/.test(name) && args[0] === "-m" && args[1] === "pimem_index") args = args.slice(2);
	else if (name !== "pimem") return `pi-tool.json's pimem is ${JSON.stringify(pimem)}, not a pimem (nor python -m pimem_index)`;
	if (args[0] !== "serve" || args[1] !== "--background") return "pi-tool.json's serve_args must start with serve --background";
	let started: string | undefined;
	for (let i = 2; i < args.length; i += 1) {
		if (args[i] === "--no-index") continue;
		if (!SERVE_OPTIONS.has(args[i]) || i + 1 >= args.length) return `pi-tool.json's serve_args has ${JSON.stringify(args[i])}, which pimem serve --background is not started with`;
		if (args[i] === "--port") started = args[i + 1];
		i += 1;
	}
	if (started !== port) return `pi-tool.json's serve_args start a server on port ${started ?? "8001"}, not on ${port} where the tool looks`;
	return undefined;
}

/** Run the recorded `pimem serve --background ...` (bounded); undefined on success, else what went wrong. */
function startServer(cfg: ToolConfig): Promise<string | undefined> {
	const refusal = startRefusal(cfg.url, cfg.pimem, cfg.serveArgs);
	if (refusal !== undefined) return Promise.resolve(`not started: ${refusal}; run: pimem pi install`);
	const pimem = cfg.pimem as string;
	return new Promise((resolve) => {
		execFile(pimem, cfg.serveArgs ?? [], { timeout: START_TIMEOUT_MS, env: process.env, shell: false }, (err, _stdout, stderr) => {
			if (!err) return resolve(undefined);
			const last = String(stderr ?? "").trim().split("\n").pop();
			resolve(last || err.message);
		});
	});
}

/** A squatter's answer: the tool says so and passes on nothing it said. */
function notOurServer(cfg: ToolConfig, why: string): Error {
	return new Error(
		`memory_context: something listens at ${cfg.url} but is not this project's pi-memory server (${why}), so the token, the query and the journal were not sent to it. Fix: stop what holds that port, or restart the server (run: pimem serve stop, then pimem serve --background), or use another port (run: pimem pi install --url http://127.0.0.1:PORT)`,
	);
}

/** Make sure the server at cfg.url holds the pi-memory secret before the token goes there (see the header). */
async function verifyServer(cfg: ToolConfig, signal: AbortSignal | undefined): Promise<void> {
	const token = cfg.token.startsWith("dstok_") ? cfg.token.slice("dstok_".length) : "";
	const dot = token.lastIndexOf(".");
	if (dot <= 0 || dot === token.length - 1) {
		throw new Error(`memory_context: the token in ${configPath()} is not a pimem token. Fix: run: pimem pi install`);
	}
	const payload = token.slice(0, dot);
	const challenge = randomBytes(32).toString("hex");
	const query = new URLSearchParams({ challenge, token_payload: payload });
	const res = await request(cfg, `${cfg.url}/-/pi-memory/api/identity?${query.toString()}`, signal, false);
	let data: unknown;
	try {
		data = await res.json();
	} catch {
		data = undefined;
	}
	const proof = data && typeof data === "object" ? (data as Json).proof : undefined;
	if (!res.ok || typeof proof !== "string") throw notOurServer(cfg, `its identity answer was HTTP ${res.status} without a proof`);
	const expected = createHmac("sha256", token.slice(dot + 1)).update(`pi-memory identity:${challenge}`).digest();
	const given = Buffer.from(proof, "hex");
	if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
		throw notOurServer(cfg, "it could not prove it holds the pi-memory secret");
	}
}

/** Verify the server and fetch; when it is unreachable start it and do both once more; only then answer with the fix. */
async function reach(cfg: ToolConfig, url: string, signal: AbortSignal | undefined): Promise<Response> {
	try {
		await verifyServer(cfg, signal);
		return await request(cfg, url, signal);
	} catch (err) {
		if (!(err instanceof Unreachable)) throw err;
		const problem = await startServer(cfg);
		try {
			await verifyServer(cfg, signal);
			return await request(cfg, url, signal);
		} catch (again) {
			if (!(again instanceof Unreachable)) throw again;
			throw new Error(
				`${again.message}; starting it failed${problem ? ` (${problem})` : ""}. Fix: start it (run: pimem serve --background)`,
			);
		}
	}
}

async function callApi(cfg: ToolConfig, action: string, query: URLSearchParams, signal: AbortSignal | undefined): Promise<Json> {
	const url = `${cfg.url}/-/pi-memory/api/${action}?${query.toString()}`;
	const res = await reach(cfg, url, signal);
	const body = await res.text();
	let data: unknown = undefined;
	try {
		data = body ? JSON.parse(body) : undefined;
	} catch {
		data = undefined;
	}
	if (res.status === 401 || res.status === 403) {
		throw new Error(
			`memory_context: the pi-memory server refused the token (HTTP ${res.status}). Fix: refresh it (run: pimem pi install)`,
		);
	}
	const errorMessage = data && typeof data === "object" && typeof (data as Json).error === "string" ? (data as Json).error : undefined;
	if (res.status === 400) {
		throw new Error(`memory_context: ${errorMessage ?? (body.slice(0, 300) || "bad request")}`);
	}
	if (!res.ok) {
		throw new Error(
			`memory_context: the pi-memory server answered HTTP ${res.status}${errorMessage ? `: ${errorMessage}` : ""}. If it persists, restart it (run: pimem serve)`,
		);
	}
	if (!data || typeof data !== "object") {
		throw new Error(`memory_context: ${cfg.url} did not answer with JSON; is it pimem serve? (run: pimem serve)`);
	}
	return data as Json;
}

export async function runMemoryContext(
	params: MemoryContextParams,
	ctx: Pick<ExtensionContext, "cwd" | "sessionManager">,
	signal?: AbortSignal,
): Promise<{ content: { type: "text"; text: string }[]; details: Json }> {
	const action = params.action;
	if (action !== "search" && action !== "read" && action !== "summaries") {
		throw new Error(`memory_context: action must be search, read or summaries, e.g. {"action": "search", "query": "login bug"}`);
	}
	if (action === "read" && !params.entryId?.trim()) {
		throw new Error(`memory_context: read needs entryId, e.g. {"action": "read", "entryId": "a1b2c3d4"} (ids come from search)`);
	}
	const cfg = loadConfig();
	let journal: string | undefined;
	try {
		journal = ctx.sessionManager.getSessionFile();
	} catch {
		journal = undefined;
	}
	const data = await callApi(cfg, action, buildQuery(params, ctx.cwd, journal), signal);
	const text = action === "read" ? formatRead(data, params) : formatHits(data);
	return { content: [{ type: "text", text }], details: data };
}

export default function memoryContextExtension(pi: ExtensionAPI): void {
	pi.registerTool({
		name: TOOL_NAME,
		label: "Memory",
		description: DESCRIPTION,
		parameters: Parameters,
		async execute(_toolCallId, params, signal, _onUpdate, ctx) {
			return runMemoryContext(params, ctx, signal);
		},
	});
}
