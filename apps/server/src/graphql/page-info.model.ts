import { Field, ObjectType } from '@nestjs/graphql';

@ObjectType({ description: 'Cursor pagination state of a connection.' })
export class PageInfo {
  @Field(() => String, { nullable: true, description: 'Pass as `after` to get the next page.' })
  endCursor!: string | null;
  @Field()
  hasNextPage!: boolean;
}
