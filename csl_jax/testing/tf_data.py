"""SeqIO and TensorFlow for tests that build tf.data pipelines, or skip."""


def seqio_and_tensorflow():
  """(seqio, tensorflow), TensorFlow's GPUs hidden (tf.data needs none;
  JAX takes them); the calling test module is skipped without them."""
  import pytest  # pylint: disable=g-import-not-at-top
  seqio = pytest.importorskip("seqio")
  tf = pytest.importorskip("tensorflow")
  try:
    tf.config.set_visible_devices([], "GPU")
  except RuntimeError:  # TF was initialized already.
    pass
  return seqio, tf
