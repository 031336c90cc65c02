"""PCFG sampling of programs + backtranslation (Yao & Koller) as method
`pcfg_bt`. Importing the package registers the method and loads only gin."""

from csl_jax.methods.pcfg_bt.method import PCFGBT
from csl_jax.methods.pcfg_bt.method import PCFGBTConfig
