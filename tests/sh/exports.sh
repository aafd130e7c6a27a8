#!/bin/sh
# libmk.so exports exactly the functions declared in runtime/mk.h: no fewer
# (a function of the header that the library hides cannot be called), no
# more (internals stay internal; the library is built with
# -fvisibility=hidden and mk.h marks its functions MK_API).  The names are
# read from the header's text, not from MK_API, so a declaration that lost
# its mark is caught too.  Also: the soname stays libmk.so.0.
set -eu
so="$B/libmk.so"
hdr=runtime/mk.h
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT

# Every function declared at file scope: comments, preprocessor lines (and
# the C++ guards between #if ... __cplusplus and #endif) and the bodies of
# structs and enums are dropped, the rest is cut at ';', and a statement
# that is not a typedef and has a '(' declares the name just before it.
awk '
	{ text = text $0 "\n" }
	END {
		out = ""
		while ((i = index(text, "/*")) > 0) {
			out = out substr(text, 1, i - 1) " "
			text = substr(text, i + 2)
			j = index(text, "*/")
			text = j ? substr(text, j + 2) : ""
		}
		text = out text
		n = split(text, line, "\n")
		code = ""
		cont = 0
		cxx = 0
		for (k = 1; k <= n; k++) {
			l = line[k]
			if (cont || l ~ /^[ \t]*#/) {
				if (l ~ /^[ \t]*#[ \t]*if.*__cplusplus/)
					cxx = 1
				else if (cxx && l ~ /^[ \t]*#[ \t]*endif/)
					cxx = 0
				cont = l ~ /\\$/
				continue
			}
			if (!cxx)
				code = code l " "
		}
		depth = 0
		stmt = ""
		for (k = 1; k <= length(code); k++) {
			c = substr(code, k, 1)
			if (c == "{") { depth++; continue }
			if (c == "}") { depth--; continue }
			if (depth > 0)
				continue
			if (c != ";") { stmt = stmt c; continue }
			if (stmt !~ /^[ \t]*typedef[ \t]/ &&
			    match(stmt, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/))
				print substr(stmt, RSTART, RLENGTH)
			stmt = ""
		}
	}' "$hdr" | sed 's/[ \t]*($//' | sort -u >"$d/header"

nm -D --defined-only "$so" | awk '{ print $NF }' | sed 's/@.*//' | sort -u >"$d/exported"

nh=$(wc -l <"$d/header")
[ "$nh" -gt 0 ] || { echo "exports: no function found in $hdr (the parser is broken)"; exit 1; }
comm -13 "$d/header" "$d/exported" >"$d/extra"
comm -23 "$d/header" "$d/exported" >"$d/missing"
status=0
if [ -s "$d/extra" ]; then
	echo "exported by $so but not declared in $hdr:"
	sed 's/^/  /' "$d/extra"
	status=1
fi
if [ -s "$d/missing" ]; then
	echo "declared in $hdr but not exported by $so (MK_API missing?):"
	sed 's/^/  /' "$d/missing"
	status=1
fi
soname=$(objdump -p "$so" | awk '$1 == "SONAME" { print $2 }')
if [ "$soname" != libmk.so.0 ]; then
	echo "soname of $so is '$soname', not libmk.so.0"
	status=1
fi
[ "$status" = 0 ] && echo "exports: $nh functions, exactly those of $hdr; soname $soname"
exit "$status"
