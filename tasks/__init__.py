"""SeqIO tasks and mixtures for csl_jax (README, "SeqIO tasks").

Importing this package registers every dataset under $CSL_JAX_DATA, if
set, with the vocabulary chosen by $CSL_JAX_VOCAB / $CSL_JAX_SPM (see
`tasks.vocab`); other datasets take one `register_dataset` call.
"""

from tasks import metrics
from tasks import registry
from tasks import vocab
from tasks.registry import register_dataset
from tasks.registry import register_from_env
from tasks.registry import unregister_dataset
from tasks.vocab import get_vocabulary
from tasks.vocab import train_sentencepiece

register_from_env()
