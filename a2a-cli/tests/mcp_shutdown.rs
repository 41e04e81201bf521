//! The MCP servers of a gateway file (`[mcp.NAME]`, stdio) are shut down
//! with `a2a serve`: on SIGTERM or Ctrl-C (SIGINT) each child has its
//! standard input closed (how MCP asks a server to exit) and gets the grace
//! to finish, and it is gone once the server has exited.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use support::{PATIENCE, arg, gateway_file, serve_in_memory, stop_with};

/// A stdio MCP server in Python (no packages): it writes its pid to
/// `argv[1]`, answers the handshake and an empty tool list, and once its
/// standard input closes, finishes some work (half a second) and writes
/// `closed` to `argv[2]`.
const SERVER: &str = r#"
import json, os, sys, time
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
for line in sys.stdin:
    msg = json.loads(line)
    method, id = msg.get("method"), msg.get("id")
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "py", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": []}
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}), flush=True)
time.sleep(0.5)
with open(sys.argv[2], "w") as f:
    f.write("closed")
"#;

/// Whether process `pid` exists (a zombie, exited but not reaped, counts).
fn exists(pid: &str) -> bool {
    Path::new("/proc").join(pid).exists()
}

#[test]
fn stopping_the_server_shuts_its_mcp_servers_down_cleanly() {
    for signal in ["-TERM", "-INT"] {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("server.py");
        std::fs::write(&script, SERVER).unwrap();
        let (pid_file, closed_file) = (dir.path().join("pid"), dir.path().join("closed"));
        let file = gateway_file(
            dir.path(),
            &format!(
                "[agents.echo]\nkind = \"rust\"\nexecutor = \"echo\"\n\n\
                 [mcp.py]\ncommand = [\"python3\", {:?}, {:?}, {:?}]\n",
                arg(&script),
                arg(&pid_file),
                arg(&closed_file)
            ),
        );
        let mut server = serve_in_memory(&["--config", arg(&file)]);
        assert!(
            server.banner.contains("MCP servers connected: 1"),
            "{}",
            server.banner
        );
        // Written before the handshake, which the server's start waited for.
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        assert!(exists(&pid), "the MCP server {pid} runs");

        let status = stop_with(&mut server.child, signal, PATIENCE);
        assert!(status.success(), "{signal}: {status:?}");
        // Asked to exit, not killed: it finished its work...
        assert_eq!(
            std::fs::read_to_string(&closed_file).ok().as_deref(),
            Some("closed"),
            "{signal}: the MCP server was not given the chance to finish"
        );
        // ...and the server waited for (and reaped) it before exiting.
        assert!(!exists(&pid), "{signal}: the MCP server {pid} outlived it");
    }
}
