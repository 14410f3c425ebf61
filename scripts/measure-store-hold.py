# Measures how long after a `skills serve` call's answer `skills ingest` must wait.
import json, subprocess, sys, time, os, tempfile
binary = sys.argv[1]
d = tempfile.mkdtemp(prefix="hold-")
env = dict(os.environ, SKILLS_DATA_DIR=d, SKILLS_DIR=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "skills"), SKILLS_SEARCH_INDEX="off")
def transcript(name, conv, n):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        for i in range(n):
            f.write(json.dumps({"role": "user", "content": f"okapi {i}", "timestamp": "2026-03-01T10:00:00Z",
                                "conversation_id": conv, "id": f"{conv}-{i}"}) + "\n")
    return p
subprocess.run([binary, "ingest", "--quiet", transcript("a.jsonl", "a", 5)], env=env, check=True, capture_output=True)
srv = subprocess.Popen([binary, "serve"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
def send(m):
    srv.stdin.write(json.dumps(m) + "\n"); srv.stdin.flush()
send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "m", "version": "0"}}})
srv.stdout.readline()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
waits = []
for k in range(3):
    send({"jsonrpc": "2.0", "id": 10 + k, "method": "tools/call", "params": {"name": "search_conversations", "arguments": {"term": "okapi"}}})
    srv.stdout.readline()
    t = time.monotonic()
    r = subprocess.run([binary, "ingest", "--quiet", transcript(f"b{k}.jsonl", f"b{k}", 3)], env=env, capture_output=True, text=True)
    waits.append((round(time.monotonic() - t, 3), r.returncode))
srv.stdin.close(); srv.wait()
print(binary, "ingest right after a call: (seconds, exit)", waits)
