# Measures `skills serve --http` memory under an `initialize` flood (issue 19, part 3):
# N initialize requests, each on a fresh connection, as the 25,000-call test did.
# Prints the server's RSS (VmRSS) and peak (VmHWM) before, right after, and after idling,
# with how many sessions were opened (200) or refused at the session cap (503).
#   python3 scripts/measure-initialize-flood.py BINARY [N=25000] [IDLE_SECONDS=10]
import http.client, json, os, subprocess, sys, tempfile, time
binary = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 25000
idle = float(sys.argv[3]) if len(sys.argv) > 3 else 10
d = tempfile.mkdtemp(prefix="flood-")
env = dict(os.environ, SKILLS_DATA_DIR=d, SKILLS_DIR=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "skills"))
srv = subprocess.Popen([binary, "serve", "--http", "127.0.0.1:0", "--no-watch"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
port = None
for line in srv.stderr:
    if "http://127.0.0.1:" in line:
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        break
def mem():
    out = {}
    with open(f"/proc/{srv.pid}/status") as f:
        for l in f:
            if l.startswith(("VmRSS", "VmHWM")):
                k, v = l.split(":")
                out[k] = int(v.split()[0]) // 1024
    return out
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}}})
headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
print("before:", mem(), "MB")
counts = {}
t = time.monotonic()
for i in range(n):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("POST", "/mcp", body, headers)
    r = c.getresponse()
    r.read()
    counts[r.status] = counts.get(r.status, 0) + 1
    c.close()
took = time.monotonic() - t
print(f"after {n} initialize requests in {took:.1f} s:", mem(), "MB; statuses", counts)
time.sleep(idle)
print(f"after {idle:.0f} s idle:", mem(), "MB")
srv.kill(); srv.wait()
