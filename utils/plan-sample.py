#!/usr/bin/env python3
"""Random pipeline plans, the planner's every stage against the IR's [A9].

usage: utils/plan-sample.py [SEED [N]]   (with build/bin on PATH)

Samples N (default 30) configurations from SEED (default 1): a GELU,
LLaMA-shaped or MoE model of 5 to 12 blocks, pp 2 to 4, every schedule
(interleaved with 2 or 3 chunks), tp 1 or 2 (MoE's too since
2026-12-07) with or without sequence parallelism, every recomputation, fp32 or bf16 compute; plans each with
`triaxc --plan ... --report-json` and compares every stage's planned
activations with `triaxc --report --report-rank` of that stage (the
planner's carry-gathered choice compiled too). One line per
configuration, flagged UNDER below -2% (a plan said to fit that may not)
and over above +5%; the worst under last. test/CostModel/plan-stage-
matrix.test pins a fixed matrix; this looks for what it misses (it found
interleaved's unequal chunks and MoE's bf16 ZB-H1 B pass, 2026-12-07).
"""
import json,subprocess,sys,random
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'test', 'CostModel', 'Inputs'))
from ir_liveness import stage_a9
random.seed(int(sys.argv[1]) if len(sys.argv)>1 else 1)
N=int(sys.argv[2]) if len(sys.argv)>2 else 30
import tempfile
tmp = tempfile.mkdtemp()
models={}
def model(kind,L):
    key=(kind,L)
    if key not in models:
        path=os.path.join(tmp, f"{kind}_{L}.mlir")
        if kind=="llama":
            cmd=f"triax-model llama2-7b --hidden 64 --heads 4 --kv-heads 2 --vocab 256 --layers {L} --ffn 256 --seq 64 --batch 16 --micro-batch 2 -o {path}"
        elif kind=="gelu":
            cmd=f"triax-model tiny --layers {L} --seq 32 --batch 16 --micro-batch 2 -o {path}"
        else:
            cmd=f"triax-model tiny-moe --layers {L} --seq 32 --batch 16 --micro-batch 2 -o {path}"
        subprocess.run(cmd.split(),check=True)
        models[key]=path
    return models[key]
worst=(0,"")
for i in range(N):
    kind=random.choice(["llama","gelu","moe"])
    L=random.choice([5,6,7,9,10,12])
    pp=random.choice([2,3,4])
    sched=random.choice(["gpipe","1f1b","interleaved","zb-h1"])
    v=random.choice([2,3]) if sched=="interleaved" else 1
    if pp*v > L: continue
    if sched=="interleaved" and 8 % pp: continue
    tp=random.choice([1,2])
    sp = tp==2 and random.random()<0.5
    rc=random.choice(["none","selective","full"])
    prec=random.choice(["fp32","fp32","bf16"])
    m=model(kind,L)
    keys=f"recompute={rc},tp={tp},sp={'on' if sp else 'off'},precision={prec}"
    flags=["--recompute",rc]+(["--sequence-parallel"] if sp else [])+(["--precision","bf16"] if prec=="bf16" else [])
    extra=""
    if sched=="interleaved":
        extra=f",virtual-stages={v}"; flags+=["--virtual-stages",str(v)]
    r=subprocess.run(["triaxc",m,"--plan",f"gpus={pp*tp},gpu=h100-80g,pp={pp},schedule={sched},micro-batch=2,top=1,{keys}{extra}","--report-json"],capture_output=True,text=True)
    if r.returncode: print("plan err",kind,L,pp,sched,r.stderr[:100]); continue
    plan=json.loads(r.stdout)
    if not plan["plans"]: print("no plan",kind,L,pp,sched,keys); continue
    p=plan["plans"][0]
    if p["carry_gathered"]: flags+=["--carry-gathered"]
    offs=[]
    for st in p["stage_peaks"]:
        try:
            a9=stage_a9(m,f"pp={pp}"+(f",tp={tp}" if tp>1 else ""),sched,flags,st["stage"]*tp)
        except subprocess.CalledProcessError as e:
            print("ir err",kind,L,pp,sched,keys,e.stderr[:200]); offs=None; break
        offs.append(st['activation_peak']/a9-1)
    if offs is None: continue
    lo=min(offs)
    tag=f"{kind} L={L} pp={pp} {sched} v={v} {keys} blocks={p['stage_blocks']}"
    if lo < worst[0]: worst=(lo,tag)
    flag = "UNDER" if lo < -0.02 else ("over" if max(offs)>0.05 else "")
    print(f"{flag:5} {tag}: "+" ".join(f"{o*100:+.1f}" for o in offs))
print("worst under", worst)
import shutil
shutil.rmtree(tmp)
