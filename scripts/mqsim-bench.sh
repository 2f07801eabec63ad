#!/usr/bin/env bash
# Trace replay speed against MQSim (docs/benchmarks.md "Trace replay"): the same DiskSim ASCII trace on the
# `paper` geometry (8 channels x 8 LUNs x 256 blocks x 512 pages of 4 KiB, 6.25 % spare; reads
# 40 us, programs 200 us, erases 2 ms), replayed by `learnedftl run --ftl ideal --preset paper
# --fill-unwritten --trace T --format disksim` and by MQSim with an ideal mapping table, runs
# alternated. Ours: the trace phase's wall time (its own report). MQSim: its wall time for the
# trace less its wall time for the trace's first request alone (start-up, preconditioning and
# writing its report are the same for both), so requests per second over the replay itself.
# A benchmark, not a test: the numbers depend on the machine and what else runs on it.
#
#   scripts/mqsim-bench.sh [TRACE]    (default: 1 M random 4 KiB reads over the logical space,
#                                      made with a fixed seed)
#   MQSIM=PATH       an MQSim binary to use
#   MQSIM_SRC=DIR    build MQSim from this checkout (CMU-SAFARI/MQSim; `make`, ~20 s on 2 cores)
#                    when MQSIM is not given; without either, only our side is measured
#   REPEAT=3         runs of each, alternated
#   REQUESTS=1000000 requests of the default trace
# Needs python3 (and g++ and make to build MQSim).
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${REPEAT:-3}
requests=${REQUESTS:-1000000}
# shellcheck source=scripts/lib/server-bench.sh
. scripts/lib/server-bench.sh python3

trace=${1:-}
if [ -z "$trace" ]; then
    trace=$work/random-reads.disksim
    # One 4 KiB read every 10 us (within what 64 LUNs serve) at a random page of the 30 GiB
    # logical space.
    python3 - "$trace" "$requests" <<'PY'
import random, sys
path, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
pages = 7_864_320
with open(path, "w") as f:
    f.writelines(f"{i * 10000} 0 {rng.randrange(pages) * 8} 8 1\n" for i in range(n))
PY
fi
n=$(grep -c . "$trace")

mqsim=${MQSIM:-}
if [ -z "$mqsim" ] && [ -n "${MQSIM_SRC:-}" ]; then
    cp -r "$MQSIM_SRC" "$work/mqsim-src"
    make -C "$work/mqsim-src" -j"$(nproc)" >"$work/mqsim-build.log" 2>&1 ||
        { tail -20 "$work/mqsim-build.log" >&2; exit 1; }
    mqsim=$work/mqsim-src/MQSim
fi

# MQSim's device: the paper preset's geometry and timing, an ideal mapping table, no data
# cache to speak of, no preconditioning (every page a read touches is mapped on first use).
cat >"$work/ssdconfig.xml" <<'XML'
<?xml version="1.0" encoding="us-ascii"?>
<Execution_Parameter_Set>
	<Host_Parameter_Set>
		<PCIe_Lane_Bandwidth>1.00000</PCIe_Lane_Bandwidth>
		<PCIe_Lane_Count>4</PCIe_Lane_Count>
		<SATA_Processing_Delay>400000</SATA_Processing_Delay>
		<Enable_ResponseTime_Logging>false</Enable_ResponseTime_Logging>
		<ResponseTime_Logging_Period_Length>1000000</ResponseTime_Logging_Period_Length>
	</Host_Parameter_Set>
	<Device_Parameter_Set>
		<Seed>321</Seed>
		<Enabled_Preconditioning>false</Enabled_Preconditioning>
		<Memory_Type>FLASH</Memory_Type>
		<HostInterface_Type>NVME</HostInterface_Type>
		<IO_Queue_Depth>65535</IO_Queue_Depth>
		<Queue_Fetch_Size>512</Queue_Fetch_Size>
		<Caching_Mechanism>SIMPLE</Caching_Mechanism>
		<Data_Cache_Sharing_Mode>SHARED</Data_Cache_Sharing_Mode>
		<Data_Cache_Capacity>65536</Data_Cache_Capacity>
		<Data_Cache_DRAM_Row_Size>8192</Data_Cache_DRAM_Row_Size>
		<Data_Cache_DRAM_Data_Rate>100</Data_Cache_DRAM_Data_Rate>
		<Data_Cache_DRAM_Data_Busrt_Size>1</Data_Cache_DRAM_Data_Busrt_Size>
		<Data_Cache_DRAM_tRCD>13</Data_Cache_DRAM_tRCD>
		<Data_Cache_DRAM_tCL>13</Data_Cache_DRAM_tCL>
		<Data_Cache_DRAM_tRP>13</Data_Cache_DRAM_tRP>
		<Address_Mapping>PAGE_LEVEL</Address_Mapping>
		<Ideal_Mapping_Table>true</Ideal_Mapping_Table>
		<CMT_Capacity>2097152</CMT_Capacity>
		<CMT_Sharing_Mode>SHARED</CMT_Sharing_Mode>
		<Plane_Allocation_Scheme>CWDP</Plane_Allocation_Scheme>
		<Transaction_Scheduling_Policy>PRIORITY_OUT_OF_ORDER</Transaction_Scheduling_Policy>
		<Overprovisioning_Ratio>0.0625</Overprovisioning_Ratio>
		<GC_Exec_Threshold>0.05000</GC_Exec_Threshold>
		<GC_Block_Selection_Policy>GREEDY</GC_Block_Selection_Policy>
		<Use_Copyback_for_GC>false</Use_Copyback_for_GC>
		<Preemptible_GC_Enabled>false</Preemptible_GC_Enabled>
		<GC_Hard_Threshold>0.005000</GC_Hard_Threshold>
		<Dynamic_Wearleveling_Enabled>false</Dynamic_Wearleveling_Enabled>
		<Static_Wearleveling_Enabled>false</Static_Wearleveling_Enabled>
		<Static_Wearleveling_Threshold>100</Static_Wearleveling_Threshold>
		<Preferred_suspend_erase_time_for_read>700000</Preferred_suspend_erase_time_for_read>
		<Preferred_suspend_erase_time_for_write>700000</Preferred_suspend_erase_time_for_write>
		<Preferred_suspend_write_time_for_read>100000</Preferred_suspend_write_time_for_read>
		<Flash_Channel_Count>8</Flash_Channel_Count>
		<Flash_Channel_Width>1</Flash_Channel_Width>
		<Channel_Transfer_Rate>333</Channel_Transfer_Rate>
		<Chip_No_Per_Channel>8</Chip_No_Per_Channel>
		<Flash_Comm_Protocol>NVDDR2</Flash_Comm_Protocol>
		<Flash_Parameter_Set>
			<Flash_Technology>SLC</Flash_Technology>
			<CMD_Suspension_Support>NONE</CMD_Suspension_Support>
			<Page_Read_Latency_LSB>40000</Page_Read_Latency_LSB>
			<Page_Read_Latency_CSB>40000</Page_Read_Latency_CSB>
			<Page_Read_Latency_MSB>40000</Page_Read_Latency_MSB>
			<Page_Program_Latency_LSB>200000</Page_Program_Latency_LSB>
			<Page_Program_Latency_CSB>200000</Page_Program_Latency_CSB>
			<Page_Program_Latency_MSB>200000</Page_Program_Latency_MSB>
			<Block_Erase_Latency>2000000</Block_Erase_Latency>
			<Block_PE_Cycles_Limit>10000</Block_PE_Cycles_Limit>
			<Suspend_Erase_Time>700000</Suspend_Erase_Time>
			<Suspend_Program_Time>100000</Suspend_Program_Time>
			<Die_No_Per_Chip>1</Die_No_Per_Chip>
			<Plane_No_Per_Die>1</Plane_No_Per_Die>
			<Block_No_Per_Plane>256</Block_No_Per_Plane>
			<Page_No_Per_Block>512</Page_No_Per_Block>
			<Page_Capacity>4096</Page_Capacity>
			<Page_Metadat_Capacity>224</Page_Metadat_Capacity>
		</Flash_Parameter_Set>
	</Device_Parameter_Set>
</Execution_Parameter_Set>
XML

# MQSim's workload: trace file $1, written to $2.
workload() {
    cat >"$2" <<XML
<?xml version="1.0" encoding="us-ascii"?>
<MQSim_IO_Scenarios>
	<IO_Scenario>
		<IO_Flow_Parameter_Set_Trace_Based>
			<Priority_Class>HIGH</Priority_Class>
			<Device_Level_Data_Caching_Mode>TURNED_OFF</Device_Level_Data_Caching_Mode>
			<Channel_IDs>0,1,2,3,4,5,6,7</Channel_IDs>
			<Chip_IDs>0,1,2,3,4,5,6,7</Chip_IDs>
			<Die_IDs>0</Die_IDs>
			<Plane_IDs>0</Plane_IDs>
			<Initial_Occupancy_Percentage>0</Initial_Occupancy_Percentage>
			<File_Path>$1</File_Path>
			<Percentage_To_Be_Executed>100</Percentage_To_Be_Executed>
			<Relay_Count>1</Relay_Count>
			<Time_Unit>NANOSECOND</Time_Unit>
		</IO_Flow_Parameter_Set_Trace_Based>
	</IO_Scenario>
</MQSim_IO_Scenarios>
XML
}
head -1 "$trace" >"$work/first.trace"
workload "$trace" "$work/workload.xml"
workload "$work/first.trace" "$work/first.xml"

# Wall seconds of command "$@" (its output to $work/last.log).
wall() {
    local a b
    a=$(date +%s%N)
    "$@" >"$work/last.log" 2>&1 || { tail -5 "$work/last.log" >&2; exit 1; }
    b=$(date +%s%N)
    python3 -c "print(($b - $a) / 1e9)"
}

printf '%-4s %12s %14s %12s %14s %14s %7s\n' run "ours s" "ours req/s" "MQSim s" "MQSim 1 req s" \
    "MQSim req/s" ratio
for r in $(seq "$repeat"); do
    "$bin" run --ftl ideal --preset paper --fill-unwritten --trace "$trace" --format disksim \
        --quiet --json "$work/ours.json" >/dev/null
    ours=$(python3 -c "import json, sys; print(next(p['wall_seconds'] for p in \
json.load(open(sys.argv[1]))['phases'] if p['phase'] == 'trace'))" "$work/ours.json")
    if [ -z "$mqsim" ]; then
        printf '%-4s %12.3f %14.0f %12s %14s %14s %7s\n' "$r" "$ours" \
            "$(python3 -c "print($n / $ours)")" - - - -
        continue
    fi
    # MQSim reads its configuration from the current directory's relative paths: run it there.
    full=$(cd "$work" && wall "$mqsim" -i ssdconfig.xml -w workload.xml)
    one=$(cd "$work" && wall "$mqsim" -i ssdconfig.xml -w first.xml)
    python3 - "$r" "$ours" "$full" "$one" "$n" <<'PY'
import sys
r, ours, full, one, n = sys.argv[1], *map(float, sys.argv[2:])
theirs = n / (full - one)
print(f"{r:<4} {ours:12.3f} {n / ours:14.0f} {full:12.3f} {one:14.3f} {theirs:14.0f} {n / ours / theirs:6.0f}x")
PY
done
echo "requests: $n ($trace); ours: the trace phase's wall time; MQSim: the trace's wall time" \
    "less one request's; $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
