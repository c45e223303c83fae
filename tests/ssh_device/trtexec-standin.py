#!/usr/bin/python3
"""trtexec STAND-IN for the edgehub SSH test device: no GPU and no TensorRT here.

It accepts trtexec's flags and prints and writes its documented formats (performance summary,
--exportLayerInfo, --exportTimes, --exportProfile, --exportOutput) with made-up numbers, so the
trtexec provider's command lines, transfers and parsing can be tested. Every run says it is a
stand-in on its first line; nothing it reports is a measurement.
"""

import json
import struct
import sys


def main(argv):
    flags = {}
    for word in argv:
        name, _, value = word.partition("=")
        flags[name] = value
    print("&&&& RUNNING TensorRT.trtexec [TensorRT v100300] (edgehub trtexec STAND-IN, no GPU) #")
    print("[I] === edgehub test device: trtexec-standin, made-up numbers, not TensorRT ===")
    if "--help" in flags:
        return 0
    if "--onnx" in flags:
        if "--saveEngine" in flags:
            with open(flags["--saveEngine"], "wb") as engine:
                engine.write(b"edgehub trtexec stand-in engine\n" + flags["--onnx"].encode())
        if "--exportLayerInfo" in flags:
            output = {"Name": "output", "Format/Datatype": "Row major linear FP16"}
            layer = {"Name": "standin_identity", "LayerType": "Identity", "Outputs": [output]}
            layers = {"Layers": [layer], "Bindings": ["input", "output"]}
            with open(flags["--exportLayerInfo"], "w") as out:
                json.dump(layers, out)
        print("[I] Engine built in 0.1 sec.")
    if "--exportTimes" in flags:
        times = [{"startHostMs": i, "latencyMs": 1 + i / 100, "computeMs": 0.9} for i in range(9)]
        with open(flags["--exportTimes"], "w") as out:
            json.dump(times, out)
    if "--exportProfile" in flags:
        profile = [{"count": 10}, {"name": "standin_layer_0", "averageMs": 0.5, "percentage": 50}]
        with open(flags["--exportProfile"], "w") as out:
            json.dump(profile, out)
    if "--exportOutput" in flags:
        # an "identity engine": the first input's bytes read as float32 come back as "output"
        first = flags.get("--loadInputs", "").split(",")[0].rpartition(":")[2]
        with open(first, "rb") as raw:
            data = raw.read()
        values = list(struct.unpack(f"<{len(data) // 4}f", data[: len(data) // 4 * 4]))
        outputs = [{"name": "output", "dimensions": f"1x{len(values)}", "values": values}]
        with open(flags["--exportOutput"], "w") as out:
            json.dump(outputs, out)
    if "--skipInference" not in flags and "--buildOnly" not in flags:
        print("[I] === Performance summary ===")
        print("[I] Throughput: 1000 qps")
        stats = "min = 0.9 ms, max = 1.1 ms, mean = 1 ms, median = 1 ms, percentile(90%) = 1.05 ms"
        print("[I] Latency: " + stats)
        print("[I] GPU Compute Time: " + stats)
        print("[I] Total Host Walltime: 0.01 s")
    print("&&&& PASSED TensorRT.trtexec [TensorRT v100300] (edgehub trtexec STAND-IN) #")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
