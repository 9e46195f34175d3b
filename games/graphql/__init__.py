"""GraphQL (graphene-django) over the same services and reads as REST: /graphql/."""
