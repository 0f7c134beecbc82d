"""scikit-learn estimators: PrivateLinearClassifier (`classifier`),
PrivateLinearRegression (`regressor`), RandomFourierFeatures (`features`) and the public
schema's transformer PublicBoundsTransformer (`transformer`); what the two linear models
share is in `_base`."""
from dperm.sklearn.classifier import PrivateLinearClassifier
from dperm.sklearn.features import RandomFourierFeatures
from dperm.sklearn.regressor import PrivateLinearRegression
from dperm.sklearn.transformer import PublicBoundsTransformer

__all__ = ["PrivateLinearClassifier", "PrivateLinearRegression", "RandomFourierFeatures",
           "PublicBoundsTransformer"]
