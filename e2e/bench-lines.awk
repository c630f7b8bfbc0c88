# Passes `go test -bench` output through and adds, after each result line
# (BenchmarkName-2  N  v1 unit1  v2 unit2 ...), the same figures as one
# `BENCH <name> n=<N> <unit>=<value> ...` line: units lowercased, "/" as
# "_per_", "-" as "_" (p99-ms → p99_ms, ns/op → ns_per_op).
{ print }
/^Benchmark[^ \t]*[ \t]+[0-9]+[ \t]/ {
	name = $1
	sub(/^Benchmark/, "", name)
	sub(/-[0-9]+$/, "", name)
	line = "BENCH " name " n=" $2
	for (i = 3; i + 1 <= NF; i += 2) {
		key = tolower($(i + 1))
		gsub(/\//, "_per_", key)
		gsub(/-/, "_", key)
		line = line " " key "=" $i
	}
	print line
}
