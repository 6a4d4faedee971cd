# poison.test's run: LAUNCHER BINARY -> one line of verdict.
launcher=$1 bin=$2
run() { $launcher ./$bin --steps 4 --log-every 1 --lr-schedule constant 2>&1 | grep '^step' | cut -d'|' -f1,2,4; }
run > $bin.clean
TRX_ALLOC_POISON=1 OMPI_MCA_mca_base_env_list=TRX_ALLOC_POISON run > $bin.poison
steps=$(wc -l < $bin.clean)
if cmp -s $bin.clean $bin.poison; then same="poisoned run identical"; else same="poisoned run DIFFERS"; fi
if grep -qi 'nan\|inf' $bin.clean $bin.poison; then fin="NOT finite"; else fin="finite"; fi
echo "$bin: $steps steps, $same, $fin"
