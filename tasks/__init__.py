"""SeqIO tasks and mixtures for csl_jax (README, "SeqIO tasks").

Importing this package registers every dataset and `augment --out` run
directory under $CSL_JAX_DATA, if set, with the vocabulary chosen by
$CSL_JAX_VOCAB / $CSL_JAX_SPM (see `tasks.vocab`): for a dataset NAME, the
tasks NAME and NAME_reversed and, per augmentation method m, the task
NAME_<m>_synthetic and mixture NAME_<m>_mixture, plus NAME_all_mixture
(`tasks.registry`). Other data take one `register_run` or
`register_dataset` call.
"""

# TensorFlow (SeqIO's) first, without its CUDA probe lines on a CPU machine.
from csl_jax import quiet as _quiet  # pylint: disable=g-bad-import-order
_quiet.import_tensorflow()

from tasks import metrics  # pylint: disable=g-import-not-at-top
from tasks import registry
from tasks import vocab
from tasks.registry import register_dataset
from tasks.registry import register_from_env
from tasks.registry import register_run
from tasks.registry import RegisteredNames
from tasks.registry import unregister_dataset
from tasks.vocab import get_vocabulary
from tasks.vocab import train_sentencepiece

register_from_env()
