import { Field, ID, InputType, Int, ObjectType } from '@nestjs/graphql';
import GraphQLJSON from 'graphql-type-json';

@InputType({
  description: 'An estimator and its parameters (defaults fill the rest; see `estimators`).',
})
export class MethodInput {
  @Field({ description: 'Registry name, e.g. "gigpo".' }) name!: string;
  @Field(() => GraphQLJSON, { nullable: true, description: 'Parameter name → value.' })
  params?: Record<string, unknown>;
}

@ObjectType()
export class EstimatorParam {
  @Field() name!: string;
  @Field({ description: 'number, boolean or enum.' }) type!: string;
  @Field(() => GraphQLJSON, { nullable: true, description: 'null: absent by default.' })
  default!: unknown;
  @Field({ description: 'Allowed values, e.g. "a number in [0, 1]".' }) allowed!: string;
  @Field() description!: string;
}

@ObjectType()
export class EstimatorDiagnostic {
  @Field() name!: string;
  @Field() kind!: string;
  @Field() description!: string;
}

@ObjectType({ description: 'One registered estimator.' })
export class Estimator {
  @Field() name!: string;
  @Field() version!: string;
  @Field() description!: string;
  @Field() paper!: string;
  @Field(() => [String], { description: 'Optional step fields the method cannot do without.' })
  requires!: string[];
  @Field(() => [EstimatorParam]) params!: EstimatorParam[];
  @Field(() => [EstimatorDiagnostic]) diagnostics!: EstimatorDiagnostic[];
}

@ObjectType('AdvantageSet', {
  description: 'A method with resolved parameters on one run: a cache of computed iterations.',
})
export class AdvantageSetView {
  @Field(() => ID) id!: string;
  @Field() method!: string;
  @Field(() => GraphQLJSON) params!: unknown;
  @Field() version!: string;
  @Field(() => [Int], { description: 'Iterations computed and stored.' }) iterations!: number[];
  @Field(() => Int) stepCount!: number;
  @Field() createdAt!: Date;
}
