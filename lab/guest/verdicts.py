# SPDX-License-Identifier: GPL-2.0-only
"""Verdicts: the rows of the leaves of a stock and a patched boot that ran
the same plan.

Shared by 'lab test' (commands/test.py, which re-runs the upstream leaves
marked 'regress') and 'lab harden's suite (commands/harden.py, which has
no re-run, so a 'regress' fails there).  Rules:
  - own tests must pass on both kernels;
  - a program that ran no test (results.no_tests()) fails on either kernel;
  - an upstream leaf that fails on patched and on stock, without a failure
    line patched printed and stock did not, is reported, not counted;
  - a leaf that passes on stock and is skipped or missing on patched fails
    (or regresses, upstream), unless it runs on stock only;
  - a SKIP must be declared (skips.tsv), and a fixture variant for the
    other kernel counts only if that kernel's boot ran it;
  - the probes of what the plan left out ("<program>.left-out") must skip
    for the reason the table gives (leftout.judge()).
"""

from . import leftout, results, skips, suites


def judge(arch_name, variant, per_flavour, plan=None):
    """Leaf verdicts of the main boots of one arch, as (status, name, detail,
    program); status 'regress' marks an upstream leaf that passes on stock
    and fails, is skipped or is missing on patched (retry_regressions()
    re-runs those).  A leaf that passes on stock and is skipped or missing
    on patched fails, unless it only runs on stock (suites.stock_only).
    plan, the boots' plan, names the probes that must have reported."""
    prefixes = {fl: f"{arch_name}/{variant}/{fl}" for fl in per_flavour}
    planned = suites.plan_programs(plan) if plan is not None else None
    rows = [row + (row[1].split("/")[3],) for row in
            leftout.judge(arch_name, "tests", prefixes, per_flavour, planned)]
    per_flavour = {fl: [r for r in leaves if not leftout.is_probe(r.program)]
                   for fl, leaves in per_flavour.items()}
    by_name = {fl: {r.name: r for r in leaves} for fl, leaves in per_flavour.items()}
    stock = by_name.get("stock", {})
    for flavour, leaves in per_flavour.items():
        for r in leaves:
            name = f"{arch_name}/{variant}/{flavour}/{r.name}"
            was = stock.get(r.name)
            # an expected failure (XFAIL) is what the test says it is,
            # on either kernel: cow's vmsplice() leak of hugetlb pages
            # comes and goes on stock as on patched
            lost = (flavour != "stock" and r.status == "skip" and was
                    and was.status == "pass" and not suites.stock_only(r.name))
            if lost:
                rows.append(("regress" if suites.is_upstream(r.program) else "fail",
                             name, f"passes on stock, skipped on patched: {r.detail}",
                             r.program))
            elif r.status == "skip":
                rows.append(skip_row(arch_name, variant, flavour, r, by_name)
                            + (r.program,))
            elif (r.status != "fail" or not suites.is_upstream(r.program)
                  or r.name.endswith("/" + results.PROGRAM_LEAVES[3])):
                # a program that ran no test is the plan's failure, not
                # an upstream test's: it fails on stock as on patched
                rows.append((r.status, name, r.detail if r.status != "pass" else "",
                             r.program))
            elif flavour == "stock":
                rows.append(("stockfail", name, "upstream test fails on stock 6.12",
                             r.program))
            elif was and was.status == "fail":
                new = results.new_failure_lines(r, was)
                rows.append(("regress", name, "fails on stock too, but printed failure "
                             f"lines stock did not: {new[0]}", r.program) if new else
                            ("stockfail", name, "fails on stock too", r.program))
            else:
                rows.append(("regress", name, "fails on patched, passes on stock"
                             if was else "fails on patched; no stock result",
                             r.program))
        if flavour == "stock" or not stock:
            continue
        have = {r.name for r in leaves}
        for n, was in stock.items():
            if n not in have and was.status == "pass" and not suites.stock_only(n):
                rows.append(("regress" if suites.is_upstream(was.program) else "fail",
                             f"{arch_name}/{variant}/{flavour}/{n}",
                             "passes on stock, missing on patched", was.program))
    return rows


def skip_row(arch_name, variant, flavour, r, by_name):
    """(status, name, detail) of a skipped leaf r of a main boot (by_name:
    {flavour: {leaf name: Result}} of the main boots): a fixture
    variant for the other kernel is 'variant' when that kernel's boot ran
    it or skipped it for a declared reason, and fails when it skipped it
    otherwise or never ran it (the test vanished there); any other skip
    must be declared (skips.account())."""
    name = f"{arch_name}/{variant}/{flavour}/{r.name}"
    other = skips.other_kernel(r.detail)
    if other and other != flavour and other in by_name:
        there = by_name[other].get(r.name)
        if there is not None and there.status != "skip":
            return ("variant", name, f"run by the {other} kernel's boot")
        if there is not None and skips.declared(
                f"{arch_name}/{variant}/{other}/{r.name}", there.detail):
            return ("variant", name, f"a declared skip of the {other} kernel's boot")
        return ("fail", name, f"{r.detail}, but the {other} kernel's boot "
                + ("skipped it too" if there is not None else "did not run it"))
    status, detail = skips.account(name, r.detail)
    return (status, name, detail)
