from django.urls import include, path

urlpatterns = [path("cas/", include("mama_cas.urls"))]
