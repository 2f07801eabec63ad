#!/usr/bin/env bash
# Scaffolds a new FTL, registered and documented, from the ideal page-level FTL
# (crates/learnedftl/src/ftl/ideal.rs: the whole LPN -> PPA table in DRAM, the shared line
# allocator and GC, trims made durable by records, recovery by a scan of every page's OOB).
# The scaffold builds, passes `learnedftl check --ftl NAME --power-cuts` and the whole test
# suite as it is; docs/architecture.md "Adding an FTL" walks through changing it.
#
#   scripts/new-ftl.sh NAME      NAME: a lowercase letter, then lowercase letters, digits, '-'
#
# Writes crates/learnedftl/src/ftl/MODULE/mod.rs (MODULE: NAME with '-' as '_'), adds it to
# `ftl::SCHEMES` (the one registration point, crates/learnedftl/src/ftl/mod.rs) and writes
# docs/ftls/NAME.md. Changes nothing when it refuses.
set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: scripts/new-ftl.sh NAME (a lowercase letter, then lowercase letters, digits or '-')"
[ $# -eq 1 ] || { echo "$usage" >&2; exit 2; }
name=$1
if ! [[ $name =~ ^[a-z][a-z0-9-]*$ ]] || [[ $name == *- ]] || [[ $name == *--* ]]; then
    echo "new-ftl: '$name' is not a valid FTL name; $usage" >&2
    exit 2
fi
module=${name//-/_}
# The type: each '-'-separated part capitalised (my-ftl -> MyFtl).
type=""
IFS=- read -ra parts <<<"$name"
for p in "${parts[@]}"; do type+="${p^}"; done

ftl_dir=crates/learnedftl/src/ftl
registry=$ftl_dir/mod.rs
doc=docs/ftls/$name.md
keywords=" as async await box break const continue crate dyn else enum extern false final fn \
for gen if impl in let loop macro match mod move mut override priv pub ref return self static \
struct super trait true try type typeof unsafe unsized use virtual where while yield "
if [[ $keywords == *" $module "* ]]; then
    echo "new-ftl: '$name' is a Rust keyword; choose another name" >&2
    exit 2
fi
if grep -q "^pub mod $module;" "$registry" || [ -e "$ftl_dir/$module" ] || [ -e "$ftl_dir/$module.rs" ]; then
    echo "new-ftl: $ftl_dir already has a module '$module'; choose another name" >&2
    exit 1
fi
# Registered names: by `registered!(Type, "name")` or a `Register` impl's `NAME`.
if grep -qE "registered!\([A-Za-z0-9_]+, \"$name\"|const NAME: &'static str = \"$name\";" -r "$ftl_dir"; then
    echo "new-ftl: an FTL named '$name' is registered already" >&2
    exit 1
fi
if [ -e "$doc" ]; then
    echo "new-ftl: $doc exists already" >&2
    exit 1
fi

mkdir "$ftl_dir/$module"
{
    cat <<HEADER
//! $name: scaffolded by \`scripts/new-ftl.sh\` from the ideal page-level FTL (\`ftl/ideal.rs\`):
//! the whole LPN → PPA table in DRAM, the shared line allocator and greedy GC
//! (\`mapping::{Allocator, gc}\`), trims made durable by trim records, and recovery by a scan
//! of every page's OOB (newest stamp wins; docs/power.md). It passes \`learnedftl check
//! --power-cuts\` and the test suite as it is. Where a new scheme changes it
//! (docs/architecture.md "Adding an FTL"):
//!
//! * \`Table\`: the mapping state (here a flat LPN-indexed array) and the GC hooks that keep it
//!   right when GC moves a page (\`moved\`) and tell GC which LPNs are unmapped;
//! * \`$type::new\`: the FTL's own \`--set\` keys (declare them with \`crate::params::keys!\`);
//! * \`Ftl::submit\`: reads (count every lookup: \`stats.lookup(flash_reads)\`, hits), writes
//!   (allocation: \`gc::alloc_page\` on a stream), trims; \`background\` and \`idle\`: the work
//!   the FTL owes after a request and on an idle device;
//! * \`Ftl::dram\`: the mapping DRAM, by part; \`Ftl::params\`: the effective parameters;
//! * \`$type::recover\`: rebuilding the mapping from flash after a power cut;
//! * \`Ftl::check_invariants\`: what the scheme promises, checked after every request in tests.
HEADER
    # The ideal FTL's code, renamed (its own module documentation dropped).
    sed -e '/^\/\/!/d' \
        -e "s/\bIdeal\b/$type/g" \
        -e "s/\"ideal\"/\"$name\"/g" \
        -e "s/ideal FTL/$name/g" \
        -e "s/an idle ideal FTL/an idle $name/g" \
        -e "s/Ideal page-map FTL\./The $name FTL./" \
        "$ftl_dir/ideal.rs"
} >"$ftl_dir/$module/mod.rs"

# Registration: the module among the others in rustfmt's order, the scheme at the end of
# `SCHEMES`.
awk -v mod="$module" -v ty="$type" '
    { lines[NR] = $0 }
    /^pub mod [a-z0-9_]+;$/ {
        last_mod = NR
        m = substr($3, 1, length($3) - 1)
        if (!before && m > mod) before = NR
    }
    /^pub const SCHEMES: &\[Scheme\] = &\[$/ { in_schemes = 1 }
    in_schemes && /^\];$/ { schemes_end = NR; in_schemes = 0 }
    END {
        if (!last_mod || !schemes_end) { print "new-ftl: ftl/mod.rs has no `pub mod` or `SCHEMES`" > "/dev/stderr"; exit 1 }
        if (!before) after = last_mod
        for (i = 1; i <= NR; i++) {
            if (i == before) print "pub mod " mod ";"
            if (i == schemes_end) print "    Scheme::of::<" mod "::" ty ">(),"
            print lines[i]
            if (i == after) print "pub mod " mod ";"
        }
    }' "$registry" >"$registry.new"
mv "$registry.new" "$registry"

cat >"$doc" <<DOC
# $name

Scaffolded by \`scripts/new-ftl.sh $name\` from the ideal page-level FTL
([ideal.rs](../../crates/learnedftl/src/ftl/ideal.rs)): so far it is that FTL under another
name. Its code is in [\`ftl/$module/\`](../../crates/learnedftl/src/ftl/$module/mod.rs).

Describe here, in SPEC's terms (docs/architecture.md "Adding an FTL"):

* **The scheme**: its mapping, how reads find a page, how writes are placed, what GC does.
* **Parameters**: every \`--set\` key it takes, its default and meaning (\`learnedftl params
  --ftl $name\` lists them).
* **Persistence**: what it writes so that recovery can rebuild it, and how recovery does
  (docs/power.md).
* **Choices**: every place the paper is silent or you departed from it, and why.
DOC

echo "Scaffolded '$name':"
echo "  $ftl_dir/$module/mod.rs   the FTL (type $type), from ftl/ideal.rs"
echo "  $registry          registered in SCHEMES"
echo "  $doc             its documentation page"
echo "Next: cargo build --release, then"
echo "  target/release/learnedftl check --ftl $name --power-cuts"
echo "  scripts/test.sh"
echo "  target/release/learnedftl compare --ftl ideal,$name --preset tiny --rw randread --bs 4k --io-size 8m"
