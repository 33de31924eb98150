# The self cost of each function of the operator's binary, summed over callgrind output files
# (`--demangle=no`), printed as "cost name". Callgrind compresses names: "(id) name" defines an id,
# "(id)" alone refers to it, per file.

function named(s, table,   id, name) {
    id = s
    sub(/\).*/, "", id)
    sub(/^\(/, "", id)
    name = s
    if (sub(/^\([0-9]+\) /, "", name)) {
        table[id] = name
    } else {
        name = table[id]
    }
    return name
}

FNR == 1 { split("", functions); split("", objects); object = ""; function_name = ""; skip = 0 }
skip { skip = 0; next }
/^ob=/ { object = named(substr($0, 4), objects); next }
/^cob=/ { named(substr($0, 5), objects); next }
/^fn=/ { function_name = named(substr($0, 4), functions); next }
/^cfn=/ { named(substr($0, 5), functions); next }
# the line after "calls=" is the call's inclusive cost, not the function's own
/^calls=/ { skip = 1; next }
/^[0-9+*-]/ {
    if (object ~ /(blueprint-operator|release-binary)$/ && function_name != "") cost[function_name] += $2
    next
}
END { for (f in cost) print cost[f], f }
