// A checkpointing program for interruption tests: counts to 40, a step every 0.2 s,
// checkpoints every 5 steps and when told to stop (reading $GPUCLOUD_INTERRUPT), resumes from
// its last checkpoint, and prints "result 820" (1 + ... + 40) at the end however often it was
// interrupted.
#pragma once

namespace gpucloud::testing {

inline constexpr const char* kCheckpointCounter = R"(
import json, os, signal, sys, time
ck = os.environ["GPUCLOUD_CHECKPOINT_DIR"]
state = os.path.join(ck, "state.json")
def commit(n):
    with open(state + ".tmp", "w") as f:
        json.dump({"n": n}, f)
    os.replace(state + ".tmp", state)
    with open(os.path.join(ck, "COMMITTED.tmp"), "w") as f:
        f.write("{}")
    os.replace(os.path.join(ck, "COMMITTED.tmp"), os.path.join(ck, "COMMITTED"))
n = 0
if os.environ.get("GPUCLOUD_RESUMED") == "1":
    n = json.load(open(state))["n"]
    print("resumed at", n, "attempt", os.environ["GPUCLOUD_ATTEMPT"], flush=True)
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
while n < 40:
    time.sleep(0.2)
    n += 1
    if n % 5 == 0:
        commit(n)
    if stop:
        info = json.load(open(os.environ["GPUCLOUD_INTERRUPT"]))
        commit(n)
        print("interrupted by", info["cause"], "at", n, "deadline", info["deadline"], flush=True)
        sys.exit(143)
print("result", sum(range(1, n + 1)), flush=True)
)";

}  // namespace gpucloud::testing
